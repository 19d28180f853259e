import Foundation
import PushEvents
import PushTestSupport
import Testing

@testable import PushConsole

/// `content.variants` through the real planner, PostgreSQL and broker, with a `tracking_log`
/// projection beside it: each device's message carries its variant's texts, and the broad log,
/// `push.delivery_variants` and the delivery's report count sends, receipts and opens per
/// variant.
@Suite("A/B variants, planned and reported", .serialized)
struct ContentVariantsIntegrationTests {
    @Test("40 devices split between two variants by their message ids; each variant's texts; figures per variant in the view and the report")
    func plannedPerVariant() async throws {
        let port = try EphemeralPort.next()
        try await DeliveryIndicatorTests.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            for app in service.apps { try await h.addSubscriptions(app, count: 20) }
            let content = #"""
                {"variants": [{"name": "short", "share": 50, "body": "Gate B12"},
                              {"name": "long", "share": 50, "title": "Your flight", "body": "Hello {{userKey}}, boarding at gate B12"}]}
                """#
            let requestId = "variants-\(h.suffix)"
            let document = requestJSON(requestId: requestId, service: service.name, content: content)

            let preview = try await DeliveryAdminTests.call(port: port, "POST", "/deliveries/preview?samples=3", body: document)
            #expect(preview.status == 200, "\(String(decoding: preview.body, as: UTF8.self))")
            let expected = try #require(preview.json["variants"] as? [[String: Any]])
            #expect(
                expected.map { "\($0["variant"] as? String ?? "") \($0["share"] as? Int ?? -1) \($0["devices"] as? Int ?? -1)" } == [
                    "short 50 20", "long 50 20",
                ])
            let samples = try #require(preview.json["samples"] as? [[String: Any]])
            #expect(samples.allSatisfy { ["short", "long"].contains($0["variant"] as? String ?? "") })

            try await h.publishRequest(document)
            let deliveryId = try await h.waitPlanned(requestId)
            let messages = try await h.plannedMessages(deliveryId)
            #expect(messages.count == 40)
            // Each message's texts are its variant's.
            var texts: Set<String> = []
            for record in try await h.messageRecords() where record.headers.string("push-delivery-id") == deliveryId {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])
                let data = try #require(object["data"] as? [String: Any])
                let variant = try #require(data["variant"] as? String)
                let body: String
                if let payload = data["payload"] as? String {
                    let aps = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])["aps"] as? [String: Any]
                    body = try #require((aps?["alert"] as? [String: String])?["body"])
                } else {
                    let message = try #require(data["message"] as? String)
                    let fcm = try #require(try JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any])["data"] as? [String: String]
                    body = try #require(fcm?["_msg"])
                }
                texts.insert(variant + " " + body.replacing(/user[0-9]+/, with: "userN"))
            }
            #expect(texts == ["short Gate B12", "long Hello userN, boarding at gate B12"])
            let perVariant = Dictionary(grouping: messages) { $0.variant ?? "none" }.mapValues(\.count)
            #expect(Set(perVariant.keys) == ["short", "long"])

            // Every message is sent; one of each variant is received; two "long" and one "short" are opened.
            let sent = try messages.map { message in
                try DeliveryIndicatorTests.result(
                    h, MessageSent(message: message, providerMessageId: "p", attempts: 1, sentAt: Date()), key: message.messageId)
            }
            try await DeliveryIndicatorTests.publish(h, sent)
            try await eventually("the broad log has the results") {
                try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(deliveryId)") == messages.count
            }
            let short = messages.filter { $0.variant == "short" }
            let long = messages.filter { $0.variant == "long" }
            let hits = [
                DeliveryIndicatorTests.trackingHit(short[0], delivery: deliveryId, tag: 1),
                DeliveryIndicatorTests.trackingHit(long[0], delivery: deliveryId, tag: 1),
                DeliveryIndicatorTests.trackingHit(short[0], delivery: deliveryId, tag: 2),
                DeliveryIndicatorTests.trackingHit(long[0], delivery: deliveryId, tag: 2),
                DeliveryIndicatorTests.trackingHit(long[1], delivery: deliveryId, tag: 2),
                DeliveryIndicatorTests.trackingHit(long[1], delivery: deliveryId, tag: 2),
            ]
            try await DeliveryIndicatorTests.publish(h, try hits.map { try DeliveryIndicatorTests.hit(h, $0) })
            try await DeliveryIndicatorTests.waitProjected(
                h, group: DeliveryIndicatorTests.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: hits.count)

            let view = try await h.text(
                """
                SELECT string_agg(variant || ' ' || messages || ' ' || sent || ' ' || received || ' ' || opened || ' ' || open_rate, ', ' ORDER BY variant)
                FROM push.delivery_variants WHERE delivery_id = \(deliveryId)
                """)
            let rate = { (opened: Int, of: Int) in String(format: "%.4f", Double(opened) / Double(of)) }
            #expect(
                view == "long \(long.count) \(long.count) 1 2 \(rate(2, long.count)), short \(short.count) \(short.count) 1 1 \(rate(1, short.count))")

            let detail = try await DeliveryAdminTests.call(port: port, "GET", "/deliveries/\(deliveryId)")
            let figures = try #require(detail.json["variants"] as? [[String: Any]], "\(String(decoding: detail.body, as: UTF8.self))")
            #expect(
                figures.map {
                    "\($0["variant"] as? String ?? "") \($0["share"] as? Int ?? -1) \($0["sent"] as? Int ?? -1) \($0["received"] as? Int ?? -1) \($0["opened"] as? Int ?? -1)"
                } == ["short 50 \(short.count) 1 1", "long 50 \(long.count) 1 2"])

            try await DeliveryIndicatorTests.checkDocumentedQueries(h, deliveryId: deliveryId, variants: true)

            // The console's report has a row per variant; pushctl report a line per variant.
            let reports = ConsoleReports(postgres: h.postgres, logger: h.logger)
            let funnel = try #require(try await reports.funnel(deliveryId: deliveryId))
            let section = ConsolePages.reportSection(
                ConsolePages.Report(
                    funnel: funnel, failures: [], sendsPerMinute: [], trackingPerHour: [], perApp: [],
                    perVariant: try await reports.perVariant(deliveryId: deliveryId), refreshSeconds: 5, readAt: Date()))
            #expect(section.contains(#"<table id="variants">"#))
            let longRate = String(format: "%.1f %%", 200 / Double(long.count))
            #expect(
                section.contains(
                    #"<tr><th scope="row">long</th><td class="n">\#(long.count)</td><td class="n">\#(long.count)</td><td class="n">0</td><td class="n">1</td><td class="n">2</td><td class="n" data-variant-open-rate="long">\#(longRate)</td></tr>"#
                ), "\(section)")
            let report = try await BuiltExecutable.run("pushctl", arguments: ["report", deliveryId])
            #expect(report.status == 0, "\(report.output)")
            let lines = report.output.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
            let longPercent = String(format: "%.1f", 200 / Double(long.count))
            #expect(lines.contains("variant long: sent \(long.count), received 1, opened 2 (\(longPercent)% of sent)"), "\(report.output)")
            #expect(lines.contains { $0.hasPrefix("variant short: sent \(short.count), received 1, opened 1") }, "\(report.output)")
        }
    }
}
