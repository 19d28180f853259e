import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushPlanning
import PushStore
import PushTestSupport
import PushTracking
import ServiceLifecycle
import Testing

/// `push.delivery_indicators`, kept by the deliveries, broad_log and tracking_log projections in
/// their own transactions: the planner and its projections run in-process with a tracking_log
/// projection beside them; results and hits are published as the senders and the tracking
/// endpoint publish them.
@Suite("Delivery indicators against the real broker and PostgreSQL", .serialized)
struct DeliveryIndicatorTests {
    /// The planning harness plus a `tracking_log` projection on the run's tracking topic.
    static func run<T: Sendable>(
        settings: PlanningSettings = PlanningHarness.testSettings, _ body: @escaping @Sendable (PlanningHarness) async throws -> T
    ) async throws -> T {
        let suffix = PlanningHarness.makeSuffix()
        return try await PlanningHarness.run(
            suffix: suffix, settings: settings,
            more: { configuration, postgres, producer, logger in
                let name = trackingGroup(suffix)
                return [
                    ProjectionRunner(
                        projection: TrackingLogProjection(name: name, topic: configuration.topics.tracking.name),
                        postgres: postgres, consumer: configuration.consumer(group: ""),
                        deadLetters: DeadLetterPublisher(producer: producer, catalog: configuration.topics, group: name), logger: logger
                    )
                ]
            }, body)
    }

    static func trackingGroup(_ suffix: String) -> String { "test.tracking-log.\(suffix)" }

    /// One delivery's row of the analysts' view.
    struct Indicators: Equatable, CustomStringConvertible {
        var toDeliver, excluded, processed, sent, failed, failedHard, failedSoft, failedIgnored, expired, impressions, opens: Int
        var impressionRate, openRate: Double?
        var description: String {
            let rates = "\(impressionRate.map { "\($0)" } ?? "null")/\(openRate.map { "\($0)" } ?? "null")"
            let failures = "failed \(failed) (hard \(failedHard) soft \(failedSoft) ignored \(failedIgnored))"
            return
                "to_deliver \(toDeliver) excluded \(excluded) processed \(processed) sent \(sent) \(failures) expired \(expired) impressions \(impressions) opens \(opens) rates \(rates)"
        }
    }

    static func indicators(_ h: PlanningHarness, _ deliveryId: String) async throws -> Indicators? {
        let rows = try await h.postgres.query(
            """
            SELECT coalesce(to_deliver, -1)::int, coalesce(excluded, -1)::int, processed::int, sent::int, failed::int, failed_hard::int,
                   failed_soft::int, failed_ignored::int, expired::int, impressions::int, opens::int, impression_rate::float8, open_rate::float8
            FROM push.delivery_indicators WHERE delivery_id = \(deliveryId)
            """,
            logger: h.logger
        )
        for try await r in rows.decode((Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Int, Double?, Double?).self) {
            return Indicators(
                toDeliver: r.0, excluded: r.1, processed: r.2, sent: r.3, failed: r.4, failedHard: r.5, failedSoft: r.6,
                failedIgnored: r.7, expired: r.8, impressions: r.9, opens: r.10, impressionRate: r.11, openRate: r.12
            )
        }
        return nil
    }

    /// Publishes events as their producers do (envelope keyed by aggregate) and checks every
    /// record was stored.
    static func publish(_ h: PlanningHarness, _ records: [KafkaProducerRecord]) async throws {
        let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
        let reports = await producer.send(records)
        await producer.close()
        for report in reports { _ = try report.get() }
    }

    static func result<E: PushEvent>(_ h: PlanningHarness, _ event: E, key: UUID) throws -> KafkaProducerRecord {
        try KafkaProducerRecord(topic: h.topics.messageResults.name, event: EventEnvelope(key: key.uuidString.lowercased(), payload: event))
    }

    static func hit(_ h: PlanningHarness, _ hit: TrackingHitRecorded) throws -> KafkaProducerRecord {
        try KafkaProducerRecord(
            topic: h.topics.tracking.name, event: EventEnvelope(key: hit.messageId, payload: hit, id: hit.trackingId, occurredAt: hit.occurredAt))
    }

    /// The hit the tracking endpoint records for the SDK's URL of `message`: the decimal `_mId`
    /// (the broadLog id), or its UUID for a message planned before broadLog ids.
    static func trackingHit(_ message: MessageReference, delivery: String, tag: Int32, at date: Date = Date()) -> TrackingHitRecorded {
        TrackingHitRecorded(
            trackingId: UUID(), messageId: message.broadLogId.map { String($0) } ?? message.messageId.uuidString.lowercased(),
            messageIdForm: message.broadLogId == nil ? "uuid" : "decimal", deliveryId: delivery, tagId: tag,
            kind: TrackingKind(tagID: tag).rawValue, occurredAt: date
        )
    }

    /// Waits until `group` has stored positions covering `count` records of `topic`: everything
    /// published there so far is projected (or skipped as already projected).
    static func waitProjected(_ h: PlanningHarness, group: String, topic: String, count: Int) async throws {
        try await eventually("\(group) projected \(count) records of \(topic)") {
            try await h.int("SELECT coalesce(sum(next_offset), 0)::int FROM push.consumer_offsets WHERE group_id = \(group) AND topic = \(topic)") >= count
        }
    }

    /// Deliveries whose counters differ from a recount of broad_log and tracking_log (the
    /// consistency check of docs/analysts.md).
    static func inconsistent(_ h: PlanningHarness, _ deliveryId: String) async throws -> Int {
        try await h.int(
            """
            SELECT count(*)::int FROM push.delivery_indicators i
            LEFT JOIN (
                SELECT delivery_id, count(*) FILTER (WHERE status = 'sent') AS sent, count(*) FILTER (WHERE status = 'failed') AS failed,
                       count(*) FILTER (WHERE failure_type = 'hard') AS failed_hard, count(*) FILTER (WHERE failure_type = 'soft') AS failed_soft,
                       count(*) FILTER (WHERE failure_type = 'ignored') AS failed_ignored, count(*) FILTER (WHERE status = 'expired') AS expired
                FROM push.broad_log WHERE delivery_id = \(deliveryId) GROUP BY delivery_id
            ) b USING (delivery_id)
            LEFT JOIN (
                SELECT delivery_id, count(DISTINCT message_id) FILTER (WHERE kind = 'received') AS impressions,
                       count(DISTINCT message_id) FILTER (WHERE kind = 'opened') AS opens
                FROM push.tracking_log WHERE delivery_id = \(deliveryId) GROUP BY delivery_id
            ) t USING (delivery_id)
            WHERE i.delivery_id = \(deliveryId)
              AND (i.sent, i.failed, i.failed_hard, i.failed_soft, i.failed_ignored, i.expired, i.impressions, i.opens)
                  IS DISTINCT FROM (coalesce(b.sent, 0), coalesce(b.failed, 0), coalesce(b.failed_hard, 0), coalesce(b.failed_soft, 0),
                                    coalesce(b.failed_ignored, 0), coalesce(b.expired, 0), coalesce(t.impressions, 0), coalesce(t.opens, 0))
            """
        )
    }

    @Test("a planned delivery with every outcome, duplicate results and duplicate hits: exact indicators, equal to a recount")
    func everyOutcome() async throws {
        try await Self.run { h in
            let (service, apps) = try await h.defineService()
            let (ios, android) = (apps[0], apps[1])
            try await h.addSubscriptions(ios, count: 6)
            try await h.addSubscriptions(android, count: 6)
            try await h.postgres.query(
                "UPDATE push.subscriptions SET disabled = true, disabled_reason = 'Unregistered', disabled_at = now() WHERE app_id = \(ios.appId) AND user_key = 'user1'",
                logger: h.logger
            )
            let requestId = "ind-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: requestId, service: service), key: requestId)
            let deliveryId = try await h.waitPlanned(requestId)
            try await eventually("to_deliver set") { try await Self.indicators(h, deliveryId)?.toDeliver == 11 }

            let messages = try await h.plannedMessages(deliveryId)
            #expect(messages.count == 11)
            let m = messages
            let sentAt = Date()

            // 0-3 sent, 4 hard, 5 soft, 6 ignored, 7 expired, 8-10 still pending.
            var results: [KafkaProducerRecord] = []
            for i in 0..<4 {
                results.append(try Self.result(h, MessageSent(message: m[i], providerMessageId: "p\(i)", attempts: 1, sentAt: sentAt), key: m[i].messageId))
            }
            for (i, type, reason) in [(4, "hard", "Unregistered"), (5, "soft", "payload-too-large"), (6, "ignored", "connection-lost")] {
                results.append(
                    try Self.result(h, MessageFailed(message: m[i], failureType: type, reason: reason, attempts: 2, failedAt: sentAt), key: m[i].messageId))
            }
            results.append(try Self.result(h, MessageExpired(message: m[7], attempts: 3, expiredAt: sentAt), key: m[7].messageId))
            // In the same batch: a repeated result, and a later contradicting one (first wins).
            results.append(results[0])
            results.append(
                try Self.result(
                    h, MessageFailed(message: m[1], failureType: "hard", reason: "Unregistered", attempts: 2, failedAt: sentAt), key: m[1].messageId))
            try await Self.publish(h, results)
            let broadLogGroup = "test.broad-log.\(h.suffix)"
            try await Self.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: results.count)

            // Later batches: the same results again, and a sent for a message already failed.
            let again =
                Array(results.prefix(8)) + [
                    try Self.result(h, MessageSent(message: m[4], providerMessageId: "late", attempts: 3, sentAt: sentAt), key: m[4].messageId)
                ]
            try await Self.publish(h, again)
            try await Self.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: results.count + again.count)

            // Hits: received for 0, 1, 2 (0 twice), opened for 0 and 1 (1 three times), a tag 3
            // for 3, and one record delivered twice (same tracking id).
            let opened = Date().addingTimeInterval(90)
            var hits = [
                Self.trackingHit(m[0], delivery: deliveryId, tag: 1), Self.trackingHit(m[0], delivery: deliveryId, tag: 1),
                Self.trackingHit(m[1], delivery: deliveryId, tag: 1), Self.trackingHit(m[2], delivery: deliveryId, tag: 1),
                Self.trackingHit(m[0], delivery: deliveryId, tag: 2, at: opened),
                Self.trackingHit(m[1], delivery: deliveryId, tag: 2, at: opened.addingTimeInterval(60)),
                Self.trackingHit(m[1], delivery: deliveryId, tag: 2, at: opened.addingTimeInterval(61)),
                Self.trackingHit(m[3], delivery: deliveryId, tag: 3),
            ]
            hits.append(hits[2])
            try await Self.publish(h, try hits.map { try Self.hit(h, $0) })
            try await Self.waitProjected(h, group: Self.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: hits.count)
            // A later batch with more of the same.
            let more = [
                hits[6], Self.trackingHit(m[1], delivery: deliveryId, tag: 2), Self.trackingHit(m[2], delivery: deliveryId, tag: 1),
            ]
            try await Self.publish(h, try more.map { try Self.hit(h, $0) })
            try await Self.waitProjected(h, group: Self.trackingGroup(h.suffix), topic: h.topics.tracking.name, count: hits.count + more.count)

            let expected = Indicators(
                toDeliver: 11, excluded: 1, processed: 8, sent: 4, failed: 3, failedHard: 1, failedSoft: 1, failedIgnored: 1, expired: 1,
                impressions: 3, opens: 2, impressionRate: 0.75, openRate: 0.5
            )
            let actual = try await Self.indicators(h, deliveryId)
            #expect(actual == expected)
            #expect(
                try await h.int("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(deliveryId)") == 10,
                "every hit is a row; the repeated record is not")
            #expect(try await h.text("SELECT status FROM push.broad_log WHERE message_id = \(m[4].messageId)") == "failed")
            #expect(try await Self.inconsistent(h, deliveryId) == 0, "the counters equal a recount of broad_log and tracking_log")

            try await Self.checkDocumentedQueries(h, deliveryId: deliveryId)

            // pushctl report: the funnel as text and as an SVG bar chart.
            let svg = FileManager.default.temporaryDirectory.appendingPathComponent("funnel-\(h.suffix).svg")
            let report = try await BuiltExecutable.run("pushctl", arguments: ["report", deliveryId, "--svg", svg.path])
            #expect(report.status == 0, "\(report.output)")
            let lines = report.output.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
            for expectedLine in [
                "targeted 11", "excluded 1 quarantined devices left out", "sent 4 36.4% of targeted", "failed 3 hard 1, soft 1, ignored 1",
                "received 3 75.0% of sent", "opened 2 50.0% of sent", "expired 1, still pending 3",
            ] {
                #expect(lines.contains(expectedLine), "\(expectedLine) in:\n\(report.output)")
            }
            let chart = try String(contentsOf: svg, encoding: .utf8)
            #expect(chart.hasPrefix("<svg xmlns=\"http://www.w3.org/2000/svg\""))
            #expect(chart.components(separatedBy: "<rect ").count - 1 == 6, "one bar per stage")
            #expect(chart.contains(#"<rect x="90" y="40" width="420""#), "targeted is the longest bar")
            try? FileManager.default.removeItem(at: svg)
            let unknown = try await BuiltExecutable.run("pushctl", arguments: ["report", "no-such-delivery"])
            #expect(unknown.status != 0)
            #expect(unknown.output.contains("no indicators for delivery no-such-delivery"), "\(unknown.output)")
        }
    }

    @Test(
        "results before their delivery is planned count once each, twice published or not; a message without a result has no row; DeliveryPlanned sets, never adds"
    )
    func resultBeforePlanned() async throws {
        try await Self.run { h in
            let deliveryId = "early\(h.suffix)"
            let app = UUID()
            let tokens = (1...3).map { n in String(repeating: "a\(n)", count: 32) }
            let refs = tokens.enumerated().map { n, token in
                MessageReference(
                    messageId: UUID(), broadLogId: Int32(n + 1), deliveryId: deliveryId, appId: app, tokenDigest: TokenDigest.of(token), platform: .ios)
            }
            let broadLogGroup = "test.broad-log.\(h.suffix)"
            let early = [
                try Self.result(h, MessageSent(message: refs[0], providerMessageId: "p0", attempts: 1, sentAt: Date()), key: refs[0].messageId),
                try Self.result(h, MessageExpired(message: refs[2], attempts: 1, expiredAt: Date()), key: refs[2].messageId),
            ]
            try await Self.publish(h, early)
            try await Self.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: early.count)
            #expect(
                try await Self.indicators(h, deliveryId).map { [$0.sent, $0.expired, $0.processed, $0.toDeliver] } == [1, 1, 2, -1],
                "counted before any planned message; to_deliver unknown (null)")

            // The message without a result has no row: it is pending in the indicators only.
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(deliveryId)") == 2)
            #expect(try await h.text("SELECT status FROM push.broad_log WHERE message_id = \(refs[0].messageId)") == "sent")
            #expect(try await h.text("SELECT status FROM push.broad_log WHERE message_id = \(refs[1].messageId)") == nil)

            let late = try Self.result(h, MessageSent(message: refs[1], providerMessageId: "p1", attempts: 1, sentAt: Date()), key: refs[1].messageId)
            try await Self.publish(h, [late, late])
            try await Self.waitProjected(h, group: broadLogGroup, topic: h.topics.messageResults.name, count: early.count + 2)

            let done = DeliveryPlanned(deliveryId: deliveryId, targeted: 3, excluded: 0, failed: 0, plannedAt: Date())
            let doneRecord = try KafkaProducerRecord(topic: h.topics.deliveryEvents.name, event: EventEnvelope(key: deliveryId, payload: done))
            try await Self.publish(h, [doneRecord, doneRecord])
            try await Self.waitProjected(h, group: "test.deliveries.\(h.suffix)", topic: h.topics.deliveryEvents.name, count: 2)

            let actual = try await Self.indicators(h, deliveryId)
            #expect(
                actual
                    == Indicators(
                        toDeliver: 3, excluded: 0, processed: 3, sent: 2, failed: 0, failedHard: 0, failedSoft: 0, failedIgnored: 0, expired: 1,
                        impressions: 0, opens: 0, impressionRate: 0, openRate: 0
                    ))
            #expect(try await Self.inconsistent(h, deliveryId) == 0)
        }
    }

    /// Every ```sql block of docs/analysts.md runs against this database (with `:'delivery_id'`
    /// set to `deliveryId`) and returns at least one row.
    /// Runs every query of docs/analysts.md for `deliveryId`, and expects rows from each. The
    /// A/B test's queries (on `push.delivery_variants`) need a delivery with variants: they run
    /// only when `variants` is true, and then alone.
    static func checkDocumentedQueries(_ h: PlanningHarness, deliveryId: String, variants: Bool = false) async throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let text = try String(contentsOf: root.appendingPathComponent("docs/analysts.md"), encoding: .utf8)
        let blocks = text.components(separatedBy: "```sql\n").dropFirst().map { $0.components(separatedBy: "```").first ?? "" }
        #expect(blocks.count >= 4, "docs/analysts.md has its example queries")
        let chosen = blocks.filter { $0.contains("push.delivery_variants") == variants }
        #expect(!chosen.isEmpty)
        for block in chosen {
            let sql = block.replacingOccurrences(of: ":'delivery_id'", with: "'\(deliveryId)'")
                .trimmingCharacters(in: .whitespacesAndNewlines).trimmingCharacters(in: CharacterSet(charactersIn: ";"))
            let rows = try await h.postgres.query(PostgresQuery(unsafeSQL: sql), logger: h.logger)
            var count = 0
            for try await _ in rows { count += 1 }
            #expect(count > 0, "no rows from documented query:\n\(sql)")
        }
    }
}
