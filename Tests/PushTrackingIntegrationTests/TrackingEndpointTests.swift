import Foundation
import Kafka
import PostgresNIO
import PushEvents
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import PushTracking
import ServiceLifecycle
import Testing

@Suite("Tracking endpoint against the real broker and PostgreSQL", .serialized)
struct TrackingEndpointTests {
    @Test("the SDKs' URLs (their literal message ids, a delivery the channel issued) answer 200 and each is one event on push.tracking with the right fields")
    func literalURLs() async throws {
        try await TrackingHarness.run { harness in
            let (first, second) = (try await harness.issueDeliveryId(), try await harness.issueDeliveryId())
            let queries = [
                "id=hd828,\(first),2",
                "id=h3039,\(second),1",
                "id=h6b6499a8-9d43-4bc5-acf0-b6aeb96846f6,\(second),2",
                "id=hd7e15e5c,\(second),1",
            ]
            for query in queries {
                let answer = try await harness.get(query)
                #expect(answer.status == 200, "\(query): \(answer.body)")
                #expect(answer.body == "OK\n")
            }
            // `/r` without the slash, an upper-case UUID, and an unknown parameter (a signature
            // is never checked) are accepted too.
            #expect(try await harness.get("id=h6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6,\(first),1", path: "/r").status == 200)
            #expect(try await harness.get("id=hD828,\(second),2&sig=ignored").status == 200)

            let records = try await harness.read(harness.topic) { $0.count >= 6 }
            let hits = try TrackingHarness.hits(records)
            #expect(hits.count == 6)
            let byDelivery = Dictionary(grouping: hits, by: { "\($0.hit.deliveryId):\($0.hit.messageId):\($0.hit.tagId)" })
            func expectHit(_ deliveryId: String, _ messageId: String, form: String, tag: Int32, kind: String) {
                guard let hit = byDelivery["\(deliveryId):\(messageId):\(tag)"]?.first else {
                    Issue.record("no event for \(deliveryId) \(messageId) \(tag)")
                    return
                }
                #expect(hit.key == messageId, "key = the normalised message id")
                #expect(hit.metadata.type == "TrackingHitRecorded")
                #expect(hit.metadata.version == 1)
                #expect(hit.metadata.key == messageId)
                #expect(hit.metadata.id == hit.hit.trackingId, "the envelope id is the tracking id")
                #expect(hit.hit.messageIdForm == form)
                #expect(hit.hit.kind == kind)
                #expect(abs(hit.hit.occurredAt.timeIntervalSinceNow) < 120)
            }
            expectHit(first, "55336", form: "decimal", tag: 2, kind: "opened")
            expectHit(second, "12345", form: "decimal", tag: 1, kind: "received")
            expectHit(second, "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6", form: "uuid", tag: 2, kind: "opened")
            expectHit(second, "-673096100", form: "decimal", tag: 1, kind: "received")
            expectHit(first, "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6", form: "uuid", tag: 1, kind: "received")
            expectHit(second, "55336", form: "decimal", tag: 2, kind: "opened")
            #expect(Set(hits.map(\.hit.trackingId)).count == 6, "one tracking id per hit")
        }
    }

    @Test("a hit for a delivery the channel never issued answers 200 as the SDK expects and is not stored; one issued meanwhile is")
    func neverIssued() async throws {
        try await TrackingHarness.run(partitions: 1) { harness in
            // The SDKs' sample ids, the preview's "0", forms the planner never writes, and a
            // number it has not given (yet).
            let later = String(Int32.random(in: 100_000_000..<1_000_000_000))
            let made = ["testDeliveryId", "deliveryId", "0", "007", "+42", "-42", "2147483648", "1e3", later]
            for delivery in made {
                let answer = try await harness.get("id=h3039,\(delivery),1")
                #expect(answer.status == 200, "\(delivery): \(answer.body)")
                #expect(answer.body == "OK\n")
            }
            // The number is issued now: its next hit (a new reading of the plans) is stored.
            _ = try await harness.issueDeliveryId(later)
            #expect(try await harness.get("id=h3039,\(later),2").status == 200)
            let records = try await harness.read(harness.topic) { read in read.contains { $0.keyString == "12345" } }
            let hits = try TrackingHarness.hits(records)
            #expect(hits.map { "\($0.hit.deliveryId) \($0.hit.tagId)" } == ["\(later) 2"], "only the hit after the id was issued")
            try await eventually("the hit is projected") { try await harness.rows(deliveryId: later).count == 1 }
            #expect(try await harness.count("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id IN ('testDeliveryId', '0', '007')") == 0)
        }
    }

    @Test("a malformed id is a 400 with a one-line reason and produces nothing")
    func refusals() async throws {
        try await TrackingHarness.run(partitions: 1) { harness in
            let cases: [(query: String, reason: String)] = [
                ("", "id parameter is missing"),
                ("id=hd828,deliveryId", "three parts"),
                ("id=hd828,a,b,2", "found 4 parts"),
                ("id=hzz,deliveryId,2", "neither a UUID nor a hex broadLog id"),
                ("id=hd828,,2", "deliveryId (second part) is empty"),
                ("id=hd828,deliveryId,open", "tagId \"open\" is not an integer"),
                ("id=hd828,deliveryId,4294967296", "out of range"),
                ("id=h10000000000000000,deliveryId,1", "more than 16 hex digits"),
                ("id=1d828,deliveryId,1", "must start with a letter"),
            ]
            for refusal in cases {
                let answer = try await harness.get(refusal.query)
                #expect(answer.status == 400, "\(refusal.query): \(answer.body)")
                #expect(answer.body.contains(refusal.reason), "\(refusal.query): \(answer.body)")
                #expect(answer.body.split(separator: "\n").count == 1, "one line")
            }
            // A good hit afterwards is the first and only record on the (single-partition) topic.
            let sentinel = try await harness.issueDeliveryId()
            #expect(try await harness.get("id=h3039,\(sentinel),1").status == 200)
            let records = try await harness.read(harness.topic) { read in
                read.contains { $0.keyString == "12345" }
            }
            let hits = try TrackingHarness.hits(records)
            #expect(hits.map(\.hit.deliveryId) == [sentinel], "the refused hits wrote nothing")
            try await eventually("the sentinel is projected") {
                try await harness.rows(deliveryId: sentinel).count == 1
            }
        }
    }

    @Test("broker unreachable: 503 within the store timeout, never a 200")
    func brokerUnreachable() async throws {
        // Port 9 on loopback: nothing listens, every connection is refused.
        let configuration = try TrackingHarness.configuration(suffix: TrackingHarness.uniqueSuffix(), brokers: "127.0.0.1:9")
        let settings = TrackingSettings(host: "127.0.0.1", port: try TrackingHarness.port(), storeTimeoutMilliseconds: 1_500)
        let logger = TrackingHarness.logger
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        let producer = try TrackingApplication.makeProducer(configuration: configuration, settings: settings, logger: logger)
        let http = TrackingApplication.httpServer(
            producer: producer, issued: IssuedDeliveries(postgres: postgres, logger: logger), configuration: configuration, settings: settings,
            logger: logger)
        let group = ServiceGroup(configuration: .init(services: [.init(service: postgres), .init(service: producer), .init(service: http)], logger: logger))
        let baseURL = URL(string: "http://127.0.0.1:\(settings.port)")!
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            let deadline = ContinuousClock.now + .seconds(10)
            while (try? await TrackingHarness.get(baseURL: baseURL, path: "/not-a-route", query: "")) == nil, ContinuousClock.now < deadline {
                try await Task.sleep(for: .milliseconds(100))
            }
            try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)
            let delivery = try await TrackingHarness.issueDeliveryId(postgres)
            // A delivery never issued is answered at once: nothing is sent to the broker.
            #expect(try await TrackingHarness.get(baseURL: baseURL, query: "id=hd828,testDeliveryId,2").status == 200)
            let clock = ContinuousClock()
            let started = clock.now
            async let first = TrackingHarness.get(baseURL: baseURL, query: "id=hd828,\(delivery),2")
            async let second = TrackingHarness.get(baseURL: baseURL, query: "id=h6b6499a8-9d43-4bc5-acf0-b6aeb96846f6,\(delivery),1")
            let answers = try await [first, second]
            let waited = clock.now - started
            for answer in answers {
                #expect(answer.status == 503, "\(answer.body)")
                #expect(answer.body == "the tracking hit could not be stored in time; retry later\n")
            }
            #expect(waited >= .milliseconds(1_000), "the broker was given its time: \(waited)")
            #expect(waited < .seconds(5), "answered within the store timeout (1.5 s) plus slack: \(waited)")
            // A malformed id is still a 400 without asking the broker.
            #expect(try await TrackingHarness.get(baseURL: baseURL, query: "id=hd828").status == 400)
            await group.triggerGracefulShutdown()
            try await tasks.waitForAll()
        }
    }

    @Test("docs/tracking-openapi.json: its examples answer 200, a malformed id a documented 400")
    func openAPIDocument() async throws {
        let url = URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/tracking-openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        #expect(Set(paths.keys) == ["/r/"])
        let operation = try #require(paths["/r/"]?["get"] as? [String: Any])
        let statuses = Set(try #require(operation["responses"] as? [String: Any]).keys)
        #expect(statuses == ["200", "400", "503"])
        let parameter = try #require((operation["parameters"] as? [[String: Any]])?.first)
        let examples = try #require(parameter["examples"] as? [String: [String: Any]]).compactMapValues { $0["value"] as? String }
        #expect(examples.count == 4)
        let pattern = try #require((parameter["schema"] as? [String: Any])?["pattern"] as? String)
        try await TrackingHarness.run { harness in
            for (name, value) in examples {
                #expect(value.range(of: pattern, options: .regularExpression) != nil, "\(name) matches the documented pattern")
                let answer = try await harness.get("id=\(value)")
                #expect(answer.status == 200, "\(name): \(answer.body)")
            }
            #expect(statuses.contains(String(try await harness.get("id=hd828,deliveryId,open").status)))
        }
    }
}
