import Foundation
import PushEvents
import PushTestSupport
import Testing

@testable import PushConsole

/// `content.languages` through the real planner, PostgreSQL and broker: each device's message
/// carries its language's texts, and the preview counts the devices per language.
@Suite("Content per language, planned and previewed", .serialized)
struct ContentLanguagesIntegrationTests {
    @Test(
        "French, Austrian-German and other devices of both platforms get their texts; the preview counts them, the broad log and the report split by language")
    func plannedPerLanguage() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            for app in service.apps {
                try await h.addSubscriptions(app, count: 6)
                // user1 fr-FR, user2 fr_CA, user3 de-AT, user4 en-US, user5 none, user6 quarantined French.
                try await h.postgres.query(
                    """
                    UPDATE push.subscriptions SET os_language = CASE user_key WHEN 'user1' THEN 'fr-FR' WHEN 'user2' THEN 'fr_CA' WHEN 'user3' THEN 'de-AT'
                        WHEN 'user4' THEN 'en-US' WHEN 'user6' THEN 'fr' ELSE '' END,
                        disabled = user_key = 'user6', disabled_reason = CASE WHEN user_key = 'user6' THEN 'Unregistered' END,
                        disabled_at = CASE WHEN user_key = 'user6' THEN now() END
                    WHERE app_id = \(app.appId)
                    """, logger: h.logger)
            }
            let content = #"""
                {"title": "Your flight", "body": "Hello {{userKey}}",
                 "languages": {"fr": {"title": "Votre vol", "body": "Bonjour {{userKey}}"}, "de": {"body": "Servus {{param.nickname}}"}}}
                """#
            let requestId = "languages-\(h.suffix)"
            let document = requestJSON(requestId: requestId, service: service.name, content: content)

            let preview = try await DeliveryAdminTests.call(port: port, "POST", "/deliveries/preview?samples=6", body: document)
            #expect(preview.status == 200, "\(String(decoding: preview.body, as: UTF8.self))")
            let counts = try #require(preview.json["languages"] as? [[String: Any]])
            #expect(counts.map { "\($0["language"] as? String ?? "default")=\($0["devices"] as? Int ?? -1)" } == ["fr=4", "default=4", "de=2"])
            let samples = try #require(preview.json["samples"] as? [[String: Any]])
            #expect(
                Set(samples.map { "\($0["userKey"] as? String ?? "")=\($0["language"] as? String ?? "default")" })
                    == ["user1=fr", "user2=fr", "user3=de", "user4=default", "user5=default"])

            try await h.publishRequest(document)
            let deliveryId = try await h.waitPlanned(requestId)
            var texts: [String: String] = [:]
            for record in try await h.messageRecords() where record.headers.string("push-delivery-id") == deliveryId {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])
                let data = try #require(object["data"] as? [String: Any])
                let token = try #require(data["registrationToken"] as? String)
                let user = try #require(try await h.text("SELECT user_key FROM push.subscriptions WHERE registration_token = \(token)"))
                if let payload = data["payload"] as? String {
                    let aps = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])["aps"] as? [String: Any]
                    let alert = try #require(aps?["alert"] as? [String: String])
                    texts["ios " + user] = [alert["title"], alert["body"]].compactMap { $0 }.joined(separator: " / ")
                } else {
                    let message = try #require(data["message"] as? String)
                    let fcm = try #require(try JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any])["data"] as? [String: String]
                    texts["android " + user] = [fcm?["title"], fcm?["_msg"]].compactMap { $0 }.joined(separator: " / ")
                }
            }
            var expected: [String: String] = [:]
            for platform in ["ios", "android"] {
                expected["\(platform) user1"] = "Votre vol / Bonjour user1"
                expected["\(platform) user2"] = "Votre vol / Bonjour user2"
                expected["\(platform) user3"] = "Servus n3"
                expected["\(platform) user4"] = "Your flight / Hello user4"
                expected["\(platform) user5"] = "Your flight / Hello user5"
            }
            #expect(texts == expected)

            // Each message names its language (the senders copy it into the results), and the
            // broad log and the delivery's report split by it. The results are published as the
            // senders publish them; one French message fails.
            let messages = try await h.plannedMessages(deliveryId)
            #expect(Dictionary(grouping: messages) { $0.language ?? "default" }.mapValues(\.count) == ["fr": 4, "de": 2, "default": 4])
            let failing = try #require(messages.first { $0.language == "fr" })
            let results = try messages.map { message in
                message == failing
                    ? try DeliveryIndicatorTests.result(
                        h, MessageFailed(message: message, failureType: "hard", reason: "Unregistered", attempts: 1, failedAt: Date()), key: message.messageId)
                    : try DeliveryIndicatorTests.result(
                        h, MessageSent(message: message, providerMessageId: "p", attempts: 1, sentAt: Date()), key: message.messageId)
            }
            try await DeliveryIndicatorTests.publish(h, results)
            try await eventually("the broad log has the results") {
                try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(deliveryId)") == messages.count
            }
            #expect(
                try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(deliveryId) AND language IS NOT DISTINCT FROM NULL") == 4)
            let detail = try await DeliveryAdminTests.call(port: port, "GET", "/deliveries/\(deliveryId)")
            let figures = try #require(detail.json["languages"] as? [[String: Any]], "\(String(decoding: detail.body, as: UTF8.self))")
            #expect(
                figures.map {
                    "\($0["language"] as? String ?? "default") \($0["messages"] as? Int ?? -1) \($0["sent"] as? Int ?? -1) \($0["failed"] as? Int ?? -1)"
                }
                    == ["fr 4 3 1", "default 4 4 0", "de 2 2 0"])

            // The console's report: a row per language texts, the failed French message counted.
            let reports = ConsoleReports(postgres: h.postgres, logger: h.logger)
            let languages = try await reports.perLanguage(deliveryId: deliveryId)
            #expect(languages.map { "\($0.language) \($0.messages) \($0.sent) \($0.failed)" } == [" 4 4 0", "fr 4 3 1", "de 2 2 0"])
            let funnel = try #require(try await reports.funnel(deliveryId: deliveryId))
            let section = ConsolePages.reportSection(
                ConsolePages.Report(
                    funnel: funnel, failures: [], sendsPerMinute: [], trackingPerHour: [], perApp: [], perLanguage: languages, refreshSeconds: 5,
                    readAt: Date()))
            #expect(
                section.contains(
                    #"<tr data-language="fr"><th scope="row">fr</th><td class="n">4</td><td class="n">3</td><td class="n">1</td><td class="n">0</td><td class="n">0</td><td class="n">0.0 %</td></tr>"#
                ), "\(section)")
            #expect(section.contains(#"<th scope="row">default texts</th>"#), "\(section)")
            #expect(try await reports.perLanguage(deliveryId: "no-such-delivery").isEmpty)
        }
    }
}
