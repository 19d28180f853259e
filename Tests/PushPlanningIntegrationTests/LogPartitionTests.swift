import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushPlanning
import PushStore
import PushTestSupport
import Testing

/// The month partitions of `broad_log`, `exclusion_log` and `tracking_log` (migration 18) with
/// the real projections (planner's deliveries and broad log, tracking ingestion's tracking log)
/// on the real broker and PostgreSQL: rows land in their month, a month without a partition
/// is held by the default partition, and the retention drops old months whole while the
/// delivery indicators keep their counts.
@Suite("Log partitions and retention against the real broker and PostgreSQL", .serialized)
struct LogPartitionTests {
    /// The partition (table name) holding each row of `table` for `deliveryId`.
    static func partitions(_ h: PlanningHarness, _ table: String, _ deliveryId: String) async throws -> [String] {
        let rows = try await h.postgres.query(
            PostgresQuery(
                unsafeSQL: "SELECT c.relname::text FROM push.\(table) t JOIN pg_class c ON c.oid = t.tableoid WHERE t.delivery_id = $1 ORDER BY 1",
                binds: {
                    var b = PostgresBindings()
                    b.append(deliveryId)
                    return b
                }()),
            logger: h.logger)
        var names: [String] = []
        for try await name in rows.decode(String.self) { names.append(name) }
        return names
    }

    static func exists(_ h: PlanningHarness, _ relation: String) async throws -> Bool {
        try await h.int("SELECT (to_regclass(\("push." + relation)) IS NOT NULL)::int") == 1
    }

    @Test(
        "rows land in their month's partition or, without one, in the default partition (older and newer than any); creating the month moves them; the retention drops old months whole and the indicators keep their counts"
    )
    func partitionsAndRetention() async throws {
        try await DeliveryIndicatorTests.run { h in
            // A month of the past no other test writes to, and one far ahead.
            var utc = Calendar(identifier: .gregorian)
            utc.timeZone = TimeZone(identifier: "UTC")!
            let old = utc.date(from: DateComponents(year: Int.random(in: 1950...1999), month: Int.random(in: 1...12), day: 10, hour: 12))!
            let far = utc.date(from: DateComponents(year: 2090, month: 7, day: 10))!
            let month = LogPartitions.name(table: "", month: old).dropFirst(2)  // "YYYYMM"
            for table in ["broad_log", "exclusion_log", "tracking_log"] {
                try await h.postgres.query(PostgresQuery(unsafeSQL: "DROP TABLE IF EXISTS push.\(table)_p\(month)"), logger: h.logger)
            }
            let deliveryId = "old-\(h.suffix)"
            let app = UUID()
            let tokens = (0..<3).map { i in "tok-\(h.suffix)-\(i)" }
            let messages = tokens.map { token in
                MessageReference(
                    messageId: UUID(), broadLogId: Int32.random(in: 1...Int32.max), deliveryId: deliveryId, appId: app,
                    tokenDigest: TokenDigest.of(token), platform: .ios)
            }
            let broadLogGroup = "test.broad-log.\(h.suffix)"
            let deliveriesGroup = "test.deliveries.\(h.suffix)"

            // A result before anything else of its delivery: it fixes the delivery's partition key.
            let expired = try DeliveryIndicatorTests.result(
                h, MessageExpired(message: messages[2], attempts: 1, expiredAt: old.addingTimeInterval(3_600)), key: messages[2].messageId)
            try await DeliveryIndicatorTests.publish(h, [expired])
            try await DeliveryIndicatorTests.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: 1)
            // Then two results, the delivery's exclusions and sizes, and hits (one far ahead of
            // every partition).
            try await DeliveryIndicatorTests.publish(
                h,
                [
                    try DeliveryIndicatorTests.result(
                        h, MessageSent(message: messages[0], providerMessageId: "p0", attempts: 1, sentAt: old.addingTimeInterval(60)),
                        key: messages[0].messageId),
                    try DeliveryIndicatorTests.result(
                        h, MessageFailed(message: messages[1], failureType: "hard", reason: "Unregistered", attempts: 1, failedAt: old.addingTimeInterval(60)),
                        key: messages[1].messageId),
                ])
            let exclusions = DeliveryExclusionsRecorded(
                deliveryId: deliveryId,
                exclusions: (0..<2).map {
                    .init(appId: app, tokenDigest: TokenDigest.of("excluded-\(h.suffix)-\($0)"), platform: .ios, reason: "quarantined: Unregistered")
                },
                excludedAt: old)
            try await DeliveryIndicatorTests.publish(
                h,
                [
                    try KafkaProducerRecord(topic: h.topics.deliveryEvents.name, event: EventEnvelope(key: deliveryId, payload: exclusions)),
                    try KafkaProducerRecord(
                        topic: h.topics.deliveryEvents.name,
                        event: EventEnvelope(
                            key: deliveryId, payload: DeliveryPlanned(deliveryId: deliveryId, targeted: 3, excluded: 2, failed: 0, plannedAt: old))),
                ])
            let hits = [
                DeliveryIndicatorTests.trackingHit(messages[0], delivery: deliveryId, tag: 1, at: old.addingTimeInterval(120)),
                DeliveryIndicatorTests.trackingHit(messages[0], delivery: deliveryId, tag: 2, at: old.addingTimeInterval(180)),
                DeliveryIndicatorTests.trackingHit(messages[0], delivery: deliveryId, tag: 2, at: far),
            ]
            try await DeliveryIndicatorTests.publish(h, try hits.map { try DeliveryIndicatorTests.hit(h, $0) })
            try await DeliveryIndicatorTests.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: 3)
            try await DeliveryIndicatorTests.waitProjected(h, group: deliveriesGroup, topic: h.topics.deliveryEvents.name, count: 2)
            try await DeliveryIndicatorTests.waitProjected(h, group: DeliveryIndicatorTests.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: 3)

            // Every row stored, in the default partitions: no partition holds their months.
            #expect(try await Self.partitions(h, "broad_log", deliveryId) == Array(repeating: "broad_log_default", count: 3))
            #expect(try await Self.partitions(h, "exclusion_log", deliveryId) == Array(repeating: "exclusion_log_default", count: 2))
            #expect(try await Self.partitions(h, "tracking_log", deliveryId) == Array(repeating: "tracking_log_default", count: 3))
            // One row per message, sharing the delivery's key (the month of its first event, the result).
            #expect(try await h.int("SELECT count(DISTINCT message_id)::int FROM push.broad_log WHERE delivery_id = \(deliveryId)") == 3)
            #expect(
                try await h.text(
                    "SELECT string_agg(DISTINCT to_char(log_month, 'YYYYMMDD'), ',') FROM push.broad_log WHERE delivery_id = \(deliveryId)") == "\(month)01")
            #expect(
                try await h.text(
                    "SELECT string_agg(DISTINCT to_char(log_month, 'YYYYMMDD'), ',') FROM push.exclusion_log WHERE delivery_id = \(deliveryId)") == "\(month)01"
            )
            #expect(try await h.text("SELECT status FROM push.broad_log WHERE message_id = \(messages[2].messageId)") == "expired")
            let before = try #require(try await DeliveryIndicatorTests.indicators(h, deliveryId))
            #expect(
                before
                    == DeliveryIndicatorTests.Indicators(
                        toDeliver: 3, excluded: 2, processed: 3, sent: 1, failed: 1, failedHard: 1, failedSoft: 0, failedIgnored: 0, expired: 1,
                        impressions: 1, opens: 1, impressionRate: 1, openRate: 1))

            // Creating the month moves its rows out of the default partitions.
            let partitions = LogPartitions(logger: h.logger)
            let created = try await h.postgres.withConnection { try await partitions.createAhead(now: old, monthsAhead: 0, on: $0) }
            #expect(created == ["broad_log_p\(month)", "exclusion_log_p\(month)", "tracking_log_p\(month)"])
            #expect(try await Self.partitions(h, "broad_log", deliveryId) == Array(repeating: "broad_log_p\(month)", count: 3))
            #expect(try await Self.partitions(h, "exclusion_log", deliveryId) == Array(repeating: "exclusion_log_p\(month)", count: 2))
            #expect(try await Self.partitions(h, "tracking_log", deliveryId) == ["tracking_log_default", "tracking_log_p\(month)", "tracking_log_p\(month)"])
            let listed = try await h.postgres.withConnection { try await partitions.list(on: $0) }
            let current = LogPartitions.name(table: "broad_log", month: Date())
            #expect(listed.contains { $0.name == current && $0.to! > Date() && $0.from! <= Date() })
            #expect(listed.filter(\.isDefault).map(\.name) == ["broad_log_default", "exclusion_log_default", "tracking_log_default"])

            // The retention as of two days after that month: a dry run changes nothing, then the
            // month is dropped whole; the far hit, this month's partitions and the counts stay.
            let monthEnd = try #require(LogPartitions.month(ofPartition: "broad_log_p\(month)", table: "broad_log")).to
            let asOf = monthEnd.addingTimeInterval(2 * 86_400)
            let dry = try await h.postgres.withConnection { try await partitions.applyRetention(retentionDays: 1, now: asOf, dryRun: true, on: $0) }
            #expect(Set(["broad_log_p\(month)", "exclusion_log_p\(month)", "tracking_log_p\(month)"]).isSubset(of: dry.dropped.map(\.name)))
            #expect(try await Self.exists(h, "broad_log_p\(month)"))
            let applied = try await h.postgres.withConnection { try await partitions.applyRetention(retentionDays: 1, now: asOf, dryRun: false, on: $0) }
            #expect(applied.dropped.map(\.name) == dry.dropped.map(\.name))
            for table in ["broad_log", "exclusion_log", "tracking_log"] {
                #expect(try await !Self.exists(h, "\(table)_p\(month)"))
                #expect(try await Self.exists(h, LogPartitions.name(table: table, month: Date())))
            }
            #expect(try await Self.partitions(h, "broad_log", deliveryId).isEmpty)
            #expect(try await Self.partitions(h, "exclusion_log", deliveryId).isEmpty)
            #expect(try await Self.partitions(h, "tracking_log", deliveryId) == ["tracking_log_default"])
            #expect(try await DeliveryIndicatorTests.indicators(h, deliveryId) == before)

            // A hit arriving afterwards for the dropped month is stored (default partition) and
            // does not count again: tracking_firsts, not partitioned, still has the first open.
            try await DeliveryIndicatorTests.publish(
                h, [try DeliveryIndicatorTests.hit(h, DeliveryIndicatorTests.trackingHit(messages[0], delivery: deliveryId, tag: 2, at: old))])
            try await DeliveryIndicatorTests.waitProjected(h, group: DeliveryIndicatorTests.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: 4)
            #expect(try await Self.partitions(h, "tracking_log", deliveryId) == ["tracking_log_default", "tracking_log_default"])
            #expect(try await DeliveryIndicatorTests.indicators(h, deliveryId) == before)
            // The next run of the retention deletes it from the default partition.
            let again = try await h.postgres.withConnection { try await partitions.applyRetention(retentionDays: 1, now: asOf, dryRun: false, on: $0) }
            #expect(again.deletedFromDefault["tracking_log"] == 1)
            #expect(try await Self.partitions(h, "tracking_log", deliveryId) == ["tracking_log_default"])
            try await h.postgres.query("DELETE FROM push.tracking_log WHERE delivery_id = \(deliveryId)", logger: h.logger)
        }
    }

    @Test("a retention of zero days or less is refused with an error naming the setting")
    func refusesNoRetention() async throws {
        try await DeliveryIndicatorTests.run { h in
            let error = await #expect(throws: LogPartitionError.self) {
                try await h.postgres.withConnection { try await LogPartitions(logger: h.logger).applyRetention(retentionDays: 0, dryRun: true, on: $0) }
            }
            #expect(error?.description.contains("PUSH_LOG_RETENTION_DAYS") == true)
        }
    }
    @Test(
        "the planner's maintenance run deletes the throttle timelines whose next slot is more than a minute past (the same as no row) and keeps the others"
    )
    func pastThrottleTimelines() async throws {
        try await DeliveryIndicatorTests.run { h in
            let suffix = UUID().uuidString.prefix(8)
            let (past, recent, ahead) = ("throttle-past-\(suffix)", "throttle-recent-\(suffix)", "throttle-ahead-\(suffix)")
            try await h.postgres.query(
                """
                INSERT INTO push.delivery_throttle (delivery_id, next_slot, per_second, updated_at) VALUES
                    (\(past), clock_timestamp() - interval '2 minutes', 10, clock_timestamp() - interval '3 minutes'),
                    (\(recent), clock_timestamp() - interval '20 seconds', 10, clock_timestamp() - interval '30 seconds'),
                    (\(ahead), clock_timestamp() + interval '1 hour', 10, clock_timestamp())
                """, logger: h.logger)
            await LogPartitionMaintenance(postgres: h.postgres, retentionDays: 0, logger: h.logger).runOnce()
            let rows = try await h.postgres.query(
                "SELECT delivery_id FROM push.delivery_throttle WHERE delivery_id IN (\(past), \(recent), \(ahead)) ORDER BY delivery_id", logger: h.logger)
            var left: [String] = []
            for try await id in rows.decode(String.self) { left.append(id) }
            #expect(left == [ahead, recent].sorted(), "rows left: \(left)")
            // Deleting again finds nothing of these; the remaining past row goes once it is a minute old.
            let again = try await h.postgres.withConnection { try await ThrottleTimelines.deletePast(margin: .seconds(10), on: $0, logger: h.logger) }
            #expect(again >= 1, "the row 20 s past is deleted with a 10 s margin")
            try await h.postgres.query("DELETE FROM push.delivery_throttle WHERE delivery_id IN (\(past), \(recent), \(ahead))", logger: h.logger)
        }
    }
}
