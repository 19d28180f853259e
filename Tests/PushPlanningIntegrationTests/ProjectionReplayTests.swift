import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushPlanning
import PushStore
import PushTestSupport
import PushTracking
import Testing

/// The analysts' tables rebuilt from the topics: `pushctl projections replay` into an empty
/// database, killed with SIGKILL mid-stream twice and run again, ends with the same deliveries,
/// exclusion log, broad log, tracking log and indicators as the live database.
@Suite("Projections rebuilt by replay equal the live ones, across SIGKILLs", .serialized)
struct ProjectionReplayTests {
    static let groups = ["deliveries", "broad-log", "tracking-log"]

    @Test("a delivery of 10,000 messages with every outcome and duplicate hits: replay killed twice, then run to the end, equals live")
    func replayEqualsLive() async throws {
        try await DeliveryIndicatorTests.run { h in
            let (service, apps) = try await h.defineService()
            try await h.addSubscriptions(apps[0], count: 5_000)
            try await h.addSubscriptions(apps[1], count: 5_000)
            try await h.postgres.query(
                "UPDATE push.subscriptions SET disabled = true, disabled_reason = 'Unregistered', disabled_at = now() WHERE app_id = \(apps[0].appId) AND user_key IN ('user1', 'user2')",
                logger: h.logger
            )
            let requestId = "replay-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: requestId, service: service), key: requestId)
            let deliveryId = try await h.waitPlanned(requestId, within: .seconds(120))

            // Outcomes by position: 1 in 20 pending, hard, soft, ignored, expired; the rest sent.
            let messages = try await h.plannedMessages(deliveryId)
            try #require(messages.count == 9_998)
            let at = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded() / 1000)
            var results: [KafkaProducerRecord] = []
            var hits: [KafkaProducerRecord] = []
            var sent = 0
            for (i, m) in messages.enumerated() {
                switch i % 20 {
                case 0: continue
                case 1:
                    results.append(
                        try DeliveryIndicatorTests.result(
                            h, MessageFailed(message: m, failureType: "hard", reason: "Unregistered", attempts: 1, failedAt: at), key: m.messageId))
                case 2:
                    results.append(
                        try DeliveryIndicatorTests.result(
                            h, MessageFailed(message: m, failureType: "soft", reason: "PayloadTooLarge", attempts: 1, failedAt: at), key: m.messageId))
                case 3:
                    results.append(
                        try DeliveryIndicatorTests.result(
                            h, MessageFailed(message: m, failureType: "ignored", reason: "connection-lost", attempts: 4, failedAt: at), key: m.messageId))
                case 4: results.append(try DeliveryIndicatorTests.result(h, MessageExpired(message: m, attempts: 3, expiredAt: at), key: m.messageId))
                default:
                    sent += 1
                    results.append(
                        try DeliveryIndicatorTests.result(h, MessageSent(message: m, providerMessageId: "p-\(i)", attempts: 1, sentAt: at), key: m.messageId))
                    if i % 2 == 0 {
                        hits.append(
                            try DeliveryIndicatorTests.hit(
                                h, DeliveryIndicatorTests.trackingHit(m, delivery: deliveryId, tag: 1, at: at.addingTimeInterval(2))))
                    }
                    if i % 10 == 5 {
                        hits.append(
                            try DeliveryIndicatorTests.hit(
                                h, DeliveryIndicatorTests.trackingHit(m, delivery: deliveryId, tag: 2, at: at.addingTimeInterval(60))))
                    }
                    if i % 50 == 5 {
                        hits.append(
                            try DeliveryIndicatorTests.hit(
                                h, DeliveryIndicatorTests.trackingHit(m, delivery: deliveryId, tag: 2, at: at.addingTimeInterval(90))))
                    }
                }
            }
            // A sender re-sending after a crash: the first 1,000 results again.
            results += results.prefix(1_000)
            try await DeliveryIndicatorTests.publish(h, results)
            try await DeliveryIndicatorTests.publish(h, hits)
            try await DeliveryIndicatorTests.waitProjected(h, group: "test.broad-log.\(h.suffix)", topic: h.topics.messageResults.name, count: results.count)
            try await DeliveryIndicatorTests.waitProjected(
                h, group: DeliveryIndicatorTests.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: hits.count)
            #expect(try await DeliveryIndicatorTests.inconsistent(h, deliveryId) == 0)
            let live = try await Self.snapshot(h.postgres, deliveryId: deliveryId, logger: h.logger)
            #expect(live["broad_log"]?.rows == 9_998 - 500, "one row per result: the pending 1 in 20 have none")
            #expect(live["tracking_log"]?.rows == hits.count)
            #expect(live["exclusion_log"]?.rows == 2)
            let indicators = try #require(try await DeliveryIndicatorTests.indicators(h, deliveryId))
            #expect(indicators.sent == sent && indicators.failedHard == 500 && indicators.expired == 500 && indicators.toDeliver == 9_998, "\(indicators)")

            // The rebuild: an empty database, migrated, replayed from the same topics.
            let database = "push_test_replay_\(h.suffix)"
            try await h.postgres.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: h.logger)
            defer { Self.dropLater(database) }
            var environment = try PlanningHarness.environment(suffix: h.suffix)
            environment["TRACKING_LOG_GROUP"] = DeliveryIndicatorTests.trackingGroup(h.suffix)
            environment["POSTGRES_URL"] = try Self.url(environment["POSTGRES_URL"], database: database)
            let migrate = try await BuiltExecutable.run("pushctl", arguments: ["migrate"], environment: environment)
            #expect(migrate.status == 0, "\(migrate.output)")

            var settings = h.configuration.postgres
            settings.database = database
            let rebuilt = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: h.logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await rebuilt.run() }
                defer { tasks.cancelAll() }
                // The subscriptions as a rebuild that replays push.subscriptions before the
                // deliveries has them (operations.md): this test wrote them into the table, not
                // the topic. exclusion_log takes its rows' tokens from them (migration 24).
                var devices: [(UUID, String, String, String, Bool, String?)] = []
                for try await row in try await h.postgres.query(
                    """
                    SELECT app_id, registration_token, platform, user_key, disabled, disabled_reason FROM push.subscriptions
                    WHERE app_id = ANY(\(apps.map(\.appId)))
                    """, logger: h.logger
                ).decode((UUID, String, String, String, Bool, String?).self) {
                    devices.append(row)
                }
                try await rebuilt.query(
                    """
                    INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, disabled, disabled_reason, registered_at, updated_at)
                    SELECT a, t, p, u, '{}', d, nullif(r, ''), now(), now()
                    FROM unnest(\(devices.map(\.0))::uuid[], \(devices.map(\.1))::text[], \(devices.map(\.2))::text[], \(devices.map(\.3))::text[],
                                \(devices.map(\.4))::bool[], \(devices.map { $0.5 ?? "" })::text[]) AS x(a, t, p, u, d, r)
                    """, logger: h.logger)
                let groupNames = ["test.deliveries.\(h.suffix)", "test.broad-log.\(h.suffix)", DeliveryIndicatorTests.trackingGroup(h.suffix)]
                func storedByGroup(_ client: PostgresClient) async throws -> [String: Int] {
                    let rows = try await client.query(
                        "SELECT group_id, sum(next_offset)::int FROM push.consumer_offsets WHERE group_id = ANY(\(groupNames)) GROUP BY group_id",
                        logger: h.logger
                    )
                    var stored: [String: Int] = [:]
                    for try await (group, sum) in rows.decode((String, Int).self) { stored[group] = sum }
                    return stored
                }
                func stored(_ client: PostgresClient) async throws -> Int { try await storedByGroup(client).values.reduce(0, +) }
                let totals = try await storedByGroup(h.postgres)
                let total = totals.values.reduce(0, +)
                let replay = [
                    "projections", "replay", "--only", "deliveries", "--only", "broad-log", "--only", "tracking-log", "--quiet-ms", "1000", "--timeout", "120",
                ]

                // Kill until two kills landed mid-stream (some positions stored, not all). A kill
                // waits until each of the three consumers has projected something in this run (or
                // had nothing left), so it interrupts projections at work. The live projections
                // above keep running meanwhile: the replay must not take their partitions.
                var kills: [Int] = []
                var attempts = 0
                while kills.filter({ $0 > 0 && $0 < total }).count < 2, attempts < 8 {
                    attempts += 1
                    let before = try await storedByGroup(rebuilt)
                    if before.values.reduce(0, +) >= total { break }
                    let process = try BuiltExecutable("pushctl", arguments: replay, environment: environment)
                    defer { process.killIfRunning() }
                    try await eventually(within: .seconds(60), "each consumer of the replay projects") {
                        let now = try await storedByGroup(rebuilt)
                        return !process.isRunning || groupNames.allSatisfy { (now[$0] ?? 0) > (before[$0] ?? 0) || (now[$0] ?? 0) >= (totals[$0] ?? 0) }
                    }
                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...100)))
                    await process.kill()
                    kills.append(try await stored(rebuilt))
                }
                #expect(kills.filter { $0 > 0 && $0 < total }.count == 2, "two kills landed mid-stream: positions \(kills) of \(total)")

                let last = try await BuiltExecutable.run("pushctl", arguments: replay, environment: environment)
                let text = last.output
                #expect(last.status == 0, "\(text)")
                #expect(text.contains("replay: caught up"), "\(text)")
                #expect(try await stored(rebuilt) == total)

                let copy = try await Self.snapshot(rebuilt, deliveryId: deliveryId, logger: h.logger)
                for table in live.keys.sorted() {
                    #expect(copy[table] == live[table], "\(table): rebuilt \(String(describing: copy[table])) live \(String(describing: live[table]))")
                }

                // The rebuilt database's next delivery id is past the replayed one.
                let next = try await rebuilt.query("SELECT nextval('push.delivery_ids')::int", logger: h.logger)
                var nextId = 0
                for try await (value) in next.decode(Int.self) { nextId = value }
                #expect(nextId > Int(deliveryId) ?? Int.max, "next delivery id \(nextId) after replaying delivery \(deliveryId)")

                let statusText = try await BuiltExecutable.run("pushctl", arguments: ["projections", "status"], environment: environment).output
                let broadLog = statusText.split(separator: "\n").first { $0.hasPrefix("broad-log ") }.map { $0.split(separator: " ") }
                #expect(broadLog?.last == "0", "nothing behind:\n\(statusText)")
            }
        }
    }

    /// Per table, the delivery's rows (every column but the projection's own write time) as a
    /// count and a digest of their text, in a stable order.
    static func snapshot(_ client: PostgresClient, deliveryId: String, logger: Logger) async throws -> [String: Rows] {
        let selects: [(String, String)] = [
            (
                "deliveries",
                "SELECT delivery_id, request_id, service_id, service_name, status, apps, audience, content, throttle_per_second, targeted, excluded, failed_at_planning, valid_until, send_at, accepted_at, planning_started_at, planned_at FROM push.deliveries"
            ),
            ("exclusion_log", "SELECT * FROM push.exclusion_log"),
            ("broad_log", "SELECT * FROM push.broad_log"),
            (
                "tracking_log",
                "SELECT tracking_id, message_id, message_id_form, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset FROM push.tracking_log"
            ),
            ("tracking_firsts", "SELECT * FROM push.tracking_firsts"),
            (
                "delivery_indicators",
                "SELECT to_deliver, excluded, processed, sent, failed, failed_hard, failed_soft, failed_ignored, expired, impressions, opens, impression_rate, open_rate FROM push.delivery_indicators"
            ),
        ]
        var snapshot: [String: Rows] = [:]
        for (table, select) in selects {
            var query = PostgresQuery(
                unsafeSQL: "SELECT count(*)::int, md5(coalesce(string_agg(x::text, E'\\n' ORDER BY x::text), '')) FROM (\(select) WHERE delivery_id = $1) x")
            query.binds.append(deliveryId)
            if table == "delivery_indicators" {
                query = PostgresQuery(
                    unsafeSQL: "SELECT count(*)::int, md5(coalesce(string_agg(x::text, E'\\n'), '')) FROM (\(select) WHERE delivery_id = $1) x")
                query.binds.append(deliveryId)
            }
            for try await (count, digest) in try await client.query(query, logger: logger).decode((Int, String).self) {
                snapshot[table] = Rows(rows: count, digest: digest)
            }
        }
        return snapshot
    }

    struct Rows: Equatable, Sendable {
        var rows: Int
        var digest: String
    }

    static func url(_ url: String?, database: String) throws -> String {
        var components = try #require(url.flatMap(URLComponents.init(string:)))
        components.path = "/\(database)"
        return try #require(components.string)
    }

    /// Drops the scratch database (psql, outside the test's clients, which may still hold it).
    static func dropLater(_ database: String) {
        guard let url = TestStack.environment["POSTGRES_URL"] else { return }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-qc", "DROP DATABASE IF EXISTS \(database) WITH (FORCE)"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try? process.run()
        process.waitUntilExit()
    }
}
