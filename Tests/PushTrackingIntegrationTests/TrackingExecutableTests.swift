import Foundation
import PushSchema
import PushStore
import PushTestSupport
import PushTracking
import Testing

/// The `tracking-ingestion` executable itself, as an operator runs it.
@Suite("tracking-ingestion executable: wiring and SIGKILL recovery", .serialized)
struct TrackingExecutableTests {
    static func start(harness: TrackingHarness, port: Int, opsPort: Int) throws -> BuiltExecutable {
        var environment = TestStack.environment
        environment["PUSH_TOPIC_TRACKING"] = harness.topic
        environment["TRACKING_LOG_GROUP"] = harness.settings.projectionName
        environment["TRACKING_HOST"] = "127.0.0.1"
        environment["TRACKING_PORT"] = String(port)
        environment["PUSH_OPS_HOST"] = "127.0.0.1"
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        environment["LOG_LEVEL"] = "error"
        return try BuiltExecutable("tracking-ingestion", environment: environment)
    }

    @Test("serves GET /r/ and /health/ready; killed with SIGKILL mid-stream twice and restarted, every hit is one row")
    func killAndRestart() async throws {
        let suffix = TrackingHarness.uniqueSuffix()
        let total = 20_000
        // No in-process service here: the executable's projection is the only writer.
        let configuration = try TrackingHarness.configuration(suffix: suffix, partitions: 4)
        try await TrackingHarness.createTopics(configuration)
        try await TrackingHarness.withPostgres { postgres in
            try await Migrator(client: postgres, logger: TrackingHarness.logger).migrate(SchemaMigrations.all)
            let delivery = try await TrackingHarness.issueDeliveryId(postgres)
            let harness = TrackingHarness(
                suffix: suffix, baseURL: URL(string: "http://127.0.0.1:1")!, postgres: postgres, configuration: configuration,
                settings: TrackingSettings(projectionName: "test.tracking-log-exe.\(suffix)"), logger: TrackingHarness.logger
            )
            let port = try TrackingHarness.port()
            let opsPort = try TrackingHarness.port()
            let baseURL = URL(string: "http://127.0.0.1:\(port)")!

            var worker = try Self.start(harness: harness, port: port, opsPort: opsPort)
            defer { worker.killIfRunning() }
            try await worker.waitUntilReady(port: opsPort, within: .seconds(30))
            let answer = try await TrackingHarness.get(baseURL: baseURL, query: "id=hd7e15e5c,\(delivery),1")
            #expect(answer.status == 200, "\(answer.body)")

            let hits = (0..<total).map { index in
                TrackingLogProjectionTests.hit(message: UUID().uuidString.lowercased(), delivery: delivery, tag: Int32(index % 2 + 1))
            }
            try await harness.publish(hits)
            let expected = total + 1
            func rows() async throws -> Int {
                try await harness.count("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(delivery)")
            }
            var killedAt: [Int] = []
            for round in 0..<2 {
                if round > 0 { worker = try Self.start(harness: harness, port: port, opsPort: opsPort) }
                let before = try await rows()
                try await eventually(within: .seconds(60), "the executable makes progress") {
                    try await rows() > before + 1_000
                }
                await worker.kill()
                killedAt.append(try await rows())
            }
            #expect(killedAt.allSatisfy { $0 < expected }, "both kills happened mid-stream: \(killedAt)")
            worker = try Self.start(harness: harness, port: port, opsPort: opsPort)
            try await eventually(within: .seconds(90), "every hit projected after the restarts") {
                try await rows() >= expected
            }
            try await Task.sleep(for: .seconds(1))
            #expect(try await rows() == expected, "no hit lost, none twice")
            #expect(
                try await harness.count("SELECT count(DISTINCT (kafka_partition, kafka_offset))::int FROM push.tracking_log WHERE delivery_id = \(delivery)")
                    == expected)

            // What an operator's Prometheus scrapes: the projection's records and its consumer
            // lag per partition, 0 once everything is read.
            let metrics = try await TrackingHarness.get(baseURL: URL(string: "http://127.0.0.1:\(opsPort)")!, path: "/metrics", query: "")
            let lines = metrics.body.split(separator: "\n")
            let lag = lines.filter { $0.hasPrefix("push_consumer_lag{") && $0.contains("group=\"\(harness.settings.projectionName)\"") }
            // A series per partition this process read (of 4; one finished before the last
            // restart has none here).
            #expect((1...4).contains(lag.count), "lag series of \(harness.topic):\n\(lines.filter { $0.contains("lag") }.joined(separator: "\n"))")
            #expect(lag.allSatisfy { $0.split(separator: " ").last.flatMap { Double($0) } == 0 && $0.contains("topic=\"\(harness.topic)\"") }, "\(lag)")
            #expect(lines.contains { $0.hasPrefix("push_projection_records_total{") }, "push_projection_records_total is exported")
            // Each batch's apply time: a histogram with one observation per batch applied.
            let applyCount = lines.first {
                $0.hasPrefix("push_projection_apply_seconds_count{") && $0.contains("projection=\"\(harness.settings.projectionName)\"")
            }
            #expect(
                (applyCount?.split(separator: " ").last.flatMap { Double($0) } ?? 0) >= 1,
                "push_projection_apply_seconds_count: \(String(describing: applyCount))")
            await worker.terminate()
            #expect(worker.terminationStatus == 0, "SIGTERM is a graceful shutdown\n\(worker.logTail())")
        }
    }
}
