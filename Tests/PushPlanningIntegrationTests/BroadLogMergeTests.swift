import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushTestSupport
import PushTracking
import Testing

@testable import PushPlanning
@testable import PushStore

/// What the COPY-and-merge write of `push.broad_log` (and of `push.tracking_log`) must get
/// right: batches are applied as `ProjectionRunner` applies them (inside one transaction, on
/// the real PostgreSQL), and through the running projection on the real broker for the
/// dead-letter rules.
@Suite("broad_log and tracking_log merged from COPY-staged batches", .serialized)
struct BroadLogMergeTests {
    static let planned = Date(timeIntervalSince1970: 1_795_000_000.125)
    static let sent = planned.addingTimeInterval(2.5)

    /// A message as the senders' results name it, planned at `planned` (nil: a result written
    /// before results carried `plannedAt`).
    static func message(_ deliveryId: String, broadLogId: Int32? = nil, plannedAt: Date? = planned) -> MessageReference {
        let messageId = UUID()
        return MessageReference(
            messageId: messageId, broadLogId: broadLogId, deliveryId: deliveryId, appId: UUID(), tokenDigest: TokenDigest.of("token-\(messageId)"),
            platform: .ios, plannedAt: plannedAt)
    }

    static func sentResult(_ message: MessageReference, at: Date = sent, provider: String = "p") -> BroadLogProjection.Outcome {
        .init(message: message, status: "sent", providerMessageId: provider, attempts: 1, at: at)
    }

    static func failed(_ message: MessageReference, type: String, at: Date = sent) -> BroadLogProjection.Outcome {
        .init(message: message, status: "failed", failureType: type, reason: "Unregistered", attempts: 2, at: at)
    }

    /// Applies one batch as the runner does: in one transaction, offsets in order.
    static func apply(_ h: PlanningHarness, _ events: [BroadLogProjection.Outcome]) async throws {
        let projection = BroadLogProjection(name: "test.merge.\(h.suffix)", catalog: h.topics)
        let projected = events.enumerated().map { ProjectedEvent(topic: "t", partition: 0, offset: Int64($0.offset), event: $0.element) }
        try await h.postgres.withTransaction(logger: h.logger) { connection in
            try await projection.apply(projected, on: connection, logger: h.logger)
        }
    }

    struct Row: Equatable {
        var status: String
        var failureType: String?
        var providerMessageId: String?
        var attempts: Int
        var createdAt: Date
        var updatedAt: Date
        var sentAt: Date?
        var broadLogId: Int32?
    }

    static func rows(_ h: PlanningHarness, _ message: MessageReference) async throws -> [Row] {
        let rows = try await h.postgres.query(
            """
            SELECT status, failure_type, provider_message_id, attempts, created_at, updated_at, sent_at, broad_log_id
            FROM push.broad_log WHERE message_id = \(message.messageId)
            """, logger: h.logger)
        var found: [Row] = []
        for try await r in rows.decode((String, String?, String?, Int, Date, Date, Date?, Int32?).self) {
            found.append(
                Row(status: r.0, failureType: r.1, providerMessageId: r.2, attempts: r.3, createdAt: r.4, updatedAt: r.5, sentAt: r.6, broadLogId: r.7))
        }
        return found
    }

    /// (sent, failed, failed_hard) of a delivery; nil without a counters row.
    static func counters(_ h: PlanningHarness, _ deliveryId: String) async throws -> [Int]? {
        let rows = try await h.postgres.query(
            "SELECT sent::int, failed::int, failed_hard::int FROM push.delivery_indicator_counts WHERE delivery_id = \(deliveryId)", logger: h.logger)
        for try await (sent, failed, hard) in rows.decode((Int, Int, Int).self) { return [sent, failed, hard] }
        return nil
    }

    @Test(
        "a result writes its message's row once: created when planned (the result's plannedAt), updated and sent at the result, counted once; a result without plannedAt is created at its own time"
    )
    func oneWritePerMessage() async throws {
        try await PlanningHarness.run(suffix: PlanningHarness.makeSuffix(), settings: PlanningHarness.testSettings) { h in
            let delivery = "merge-one-\(h.suffix)"
            let a = Self.message(delivery, broadLogId: 7)
            let b = Self.message(delivery)
            let older = Self.message(delivery, plannedAt: nil)
            try await Self.apply(h, [Self.sentResult(a), Self.failed(b, type: "hard"), Self.sentResult(older)])
            #expect(
                try await Self.rows(h, a) == [
                    Row(status: "sent", providerMessageId: "p", attempts: 1, createdAt: Self.planned, updatedAt: Self.sent, sentAt: Self.sent, broadLogId: 7)
                ])
            #expect(
                try await Self.rows(h, b) == [
                    Row(status: "failed", failureType: "hard", attempts: 2, createdAt: Self.planned, updatedAt: Self.sent, broadLogId: nil)
                ])
            #expect(try await Self.rows(h, older).map(\.createdAt) == [Self.sent])
            #expect(try await Self.counters(h, delivery) == [2, 1, 1])
        }
    }

    @Test("the same results twice in a batch, the batch again (a replay) and a later contradicting result: the same rows, counted once")
    func sameEventTwice() async throws {
        try await PlanningHarness.run(suffix: PlanningHarness.makeSuffix(), settings: PlanningHarness.testSettings) { h in
            let delivery = "merge-twice-\(h.suffix)"
            let a = Self.message(delivery)
            let c = Self.message(delivery)
            let batch = [Self.sentResult(a), Self.sentResult(a), Self.failed(c, type: "soft"), Self.sentResult(c)]
            try await Self.apply(h, batch)
            let first = [try await Self.rows(h, a), try await Self.rows(h, c)]
            #expect(first.map(\.count) == [1, 1])
            #expect(first.map { $0.first?.status } == ["sent", "failed"], "the first result of a message in a batch wins")
            #expect(try await Self.counters(h, delivery) == [1, 1, 0])
            try await Self.apply(h, batch)
            try await Self.apply(h, Array(batch.reversed()))
            try await Self.apply(h, [Self.failed(a, type: "hard", at: Self.sent.addingTimeInterval(5))])
            #expect([try await Self.rows(h, a), try await Self.rows(h, c)] == first)
            #expect(try await Self.counters(h, delivery) == [1, 1, 0])
        }
    }

    @Test("a row an earlier version left pending takes its result once, keeping its created_at and broadLog id")
    func pendingRowOfAnEarlierVersion() async throws {
        try await PlanningHarness.run(suffix: PlanningHarness.makeSuffix(), settings: PlanningHarness.testSettings) { h in
            let delivery = "merge-pending-\(h.suffix)"
            let a = Self.message(delivery, broadLogId: 12)
            let earlier = Self.planned.addingTimeInterval(-60)
            try await h.postgres.query(
                """
                WITH k AS (
                    INSERT INTO push.broad_log_deliveries (delivery_id, log_month) VALUES (\(delivery), date_trunc('month', \(earlier) AT TIME ZONE 'UTC')::date)
                    RETURNING log_month
                )
                INSERT INTO push.broad_log (message_id, broad_log_id, delivery_id, app_id, token_digest, platform, status, attempts, created_at,
                                            updated_at, log_month)
                SELECT \(a.messageId), 12, \(delivery), \(a.appId), \(a.tokenDigest), 'ios', 'pending', 0, \(earlier), \(earlier), log_month FROM k
                """, logger: h.logger)
            try await Self.apply(h, [Self.failed(a, type: "soft")])
            let expected = Row(status: "failed", failureType: "soft", attempts: 2, createdAt: earlier, updatedAt: Self.sent, broadLogId: 12)
            #expect(try await Self.rows(h, a) == [expected])
            try await Self.apply(h, [Self.sentResult(a)])
            #expect(try await Self.rows(h, a) == [expected])
            #expect(try await Self.counters(h, delivery) == [0, 1, 0])
        }
    }

    @Test("tracking_log: texts with tabs, newlines and backslashes and timestamps to the microsecond arrive as written")
    func trackingTextsAndTimes() async throws {
        try await PlanningHarness.run(suffix: PlanningHarness.makeSuffix(), settings: PlanningHarness.testSettings) { h in
            let delivery = "merge-tracking\t\\N\n\r\\-\(h.suffix) é 😀"
            let times = [
                Date(timeIntervalSince1970: 1_795_000_000.123456), Date(timeIntervalSince1970: 946_684_799.999999),
                Date(timeIntervalSince1970: 1_709_164_800), Date(timeIntervalSince1970: -86_400.5),
            ]
            let hits = times.enumerated().map { index, at in
                TrackingHitRecorded(
                    trackingId: UUID(), messageId: "m\\\(index)\t", messageIdForm: "uuid", deliveryId: delivery, tagId: Int32(index % 2 + 1),
                    kind: index % 2 == 0 ? "received" : "opened", occurredAt: at)
            }
            let projection = TrackingLogProjection(name: "test.merge-tracking.\(h.suffix)", topic: "t")
            for _ in 0..<2 {
                try await h.postgres.withTransaction(logger: h.logger) { connection in
                    try await projection.apply(
                        hits.enumerated().map { ProjectedEvent(topic: "t", partition: 3, offset: Int64($0.offset), event: $0.element) }, on: connection,
                        logger: h.logger)
                }
            }
            let rows = try await h.postgres.query(
                "SELECT tracking_id, message_id, occurred_at, kafka_partition FROM push.tracking_log WHERE delivery_id = \(delivery) ORDER BY kafka_offset",
                logger: h.logger)
            var read: [(UUID, String, Date, Int32)] = []
            for try await row in rows.decode((UUID, String, Date, Int32).self) { read.append(row) }
            #expect(read.map(\.0) == hits.map(\.trackingId))
            #expect(read.map(\.1) == hits.map(\.messageId))
            // To the microsecond (a `Date` is a Double: compare the microseconds, not the bits).
            let microseconds = { (date: Date) in Int64((date.timeIntervalSince1970 * 1_000_000).rounded()) }
            #expect(read.map { microseconds($0.2) } == times.map(microseconds))
            #expect(read.allSatisfy { $0.3 == 3 })
            let counts = try await h.postgres.query(
                "SELECT impressions::int, opens::int FROM push.delivery_indicator_counts WHERE delivery_id = \(delivery)", logger: h.logger)
            for try await (impressions, opens) in counts.decode((Int, Int).self) {
                #expect(impressions == 2)
                #expect(opens == 2)
            }
        }
    }

    @Test("a record the reader refuses and one PostgreSQL refuses go to the dead-letter topic; the rest of their batch is written")
    func deadLettersBesideTheBatch() async throws {
        try await PlanningHarness.run(suffix: PlanningHarness.makeSuffix(), settings: PlanningHarness.testSettings) { h in
            let delivery = "merge-dlq-\(h.suffix)"
            let topic = h.topics.messageResults.name
            let good = (0..<20).map { _ in Self.message(delivery) }
            var nul = Self.message(delivery)
            nul.tokenDigest = "digest\u{0}nul"
            func record(_ message: MessageReference) throws -> KafkaProducerRecord {
                try KafkaProducerRecord(
                    topic: topic,
                    event: EventEnvelope(
                        key: message.messageId.uuidString.lowercased(),
                        payload: MessageSent(message: message, providerMessageId: "p", attempts: 1, sentAt: Self.sent)))
            }
            var records = try good.prefix(10).map(record)
            records.append(KafkaProducerRecord(topic: topic, key: Array("unreadable".utf8), value: Array(#"{"type":"MessageSent","version":1}"#.utf8)))
            records.append(try record(nul))
            records += try good.suffix(10).map(record)
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            let reports = await producer.send(records)
            await producer.close()
            for report in reports { _ = try report.get() }

            try await eventually("the good results are rows") {
                try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(delivery) AND status = 'sent'") == good.count
            }
            // Dead letters are at least once: when PostgreSQL refuses a record, the runner applies
            // the batch again record by record, and the unreadable record is published again.
            let keys = { @Sendable () async throws -> Set<String> in
                Set(try await h.records("\(topic).dlq").compactMap { $0.key.map { String(decoding: $0, as: UTF8.self) } })
            }
            let refused: Set<String> = ["unreadable", nul.messageId.uuidString.lowercased()]
            try await eventually("both refused records are dead letters") { try await keys() == refused }
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(delivery)") == good.count)
            #expect(try await Self.counters(h, delivery) == [good.count, 0, 0])
        }
    }
}
