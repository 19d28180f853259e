import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushStore

/// Keeps `push.broad_log`, one row per message, from the message topics (a `pending` row per
/// planned message) and `push.message-results` (its outcome).
///
/// The topics are read by one consumer but their records arrive in no particular order
/// relative to each other, so both kinds of write are upserts: a result may create the row
/// before its planned message is seen; a final status (`sent`, `failed`, `expired`, `cancelled`) is never
/// overwritten by `pending` or by a later result. Rows are written in bulk (one statement per
/// kind per batch).
///
/// It also keeps the outcome counters of `push.delivery_indicator_counts` (sent, failed by type,
/// expired, cancelled) in the same statement as the results: only a row that this batch creates in, or moves
/// to, a final status counts, so a repeated or late result never counts twice and a planned
/// message arriving after its result counts nothing.
///
/// Devices erased (`push.erased_devices`, issue 28) are not logged again: a planned message of
/// an erased device planned at or before its erasure is skipped, and so is a result that would
/// create the row of an erased device (no row yet) unless its delivery was accepted after the
/// erasure (a person who came back with the same token is logged again). So a replay of the
/// message topics, or a result arriving after the erasure for a message planned before it,
/// does not bring the erased person's rows back; a skipped result counts in no indicator
/// (docs/architecture.md, "Erasure").
///
/// `push.broad_log` is partitioned by `log_month` (the delivery's UTC month), one value per
/// delivery kept in `push.broad_log_deliveries` (migration 18): the conflict target `(message_id, log_month)`
/// then finds a message's row whichever of its events comes first, and retention drops whole
/// deliveries.
package struct BroadLogProjection: EnvelopeProjection {
    package enum Event: Sendable {
        case planned(MessageReference, Date)
        case result(MessageReference, Outcome)
    }

    package struct Outcome: Sendable {
        var status: String
        var failureType: String?
        var reason: String?
        var providerMessageId: String?
        var attempts: Int
        var at: Date
    }

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<Event>

    package init(name: String = "push-broad-log-projection", catalog: TopicCatalog) {
        self.name = name
        self.topics = catalog.messageTopics.map(\.name) + [catalog.messageResults.name]
        var decoder = EventDecoder<Event>()
        decoder.register(APNSMessagePlanned.self) { event, _ in
            .planned(
                MessageReference(
                    messageId: event.messageId, broadLogId: event.broadLogId, deliveryId: event.deliveryId, appId: event.appId,
                    registrationToken: event.registrationToken, platform: .ios),
                event.plannedAt)
        }
        decoder.register(FCMMessagePlanned.self) { event, _ in
            .planned(
                MessageReference(
                    messageId: event.messageId, broadLogId: event.broadLogId, deliveryId: event.deliveryId, appId: event.appId,
                    registrationToken: event.registrationToken, platform: .android
                ), event.plannedAt)
        }
        decoder.register(MessageSent.self) { event, _ in
            .result(event.message, Outcome(status: "sent", providerMessageId: event.providerMessageId, attempts: event.attempts, at: event.sentAt))
        }
        decoder.register(MessageFailed.self) { event, _ in
            .result(
                event.message, Outcome(status: "failed", failureType: event.failureType, reason: event.reason, attempts: event.attempts, at: event.failedAt))
        }
        decoder.register(MessageExpired.self) { event, _ in
            .result(event.message, Outcome(status: "expired", attempts: event.attempts, at: event.expiredAt))
        }
        decoder.register(MessageCancelled.self) { event, _ in
            .result(event.message, Outcome(status: "cancelled", attempts: event.attempts, at: event.cancelledAt))
        }
        self.decoder = decoder
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        var planned: [(MessageReference, Date)] = []
        // The first result per message in this batch wins, as it would row by row.
        var results: [UUID: (MessageReference, Outcome)] = [:]
        var resultOrder: [UUID] = []
        for projected in events {
            switch projected.event {
            case .planned(let message, let at):
                planned.append((message, at))
            case .result(let message, let outcome):
                if results[message.messageId] == nil {
                    results[message.messageId] = (message, outcome)
                    resultOrder.append(message.messageId)
                }
            }
        }
        // The partition key of every delivery this batch names, fixed by the first batch that
        // writes a row of it (the month its fan-out may start, `deliveries.send_at`, when the deliveries projection has it,
        // else of the batch's earliest event of it) and read back by the inserts below: all of a
        // delivery's rows share one `log_month`, whichever of its events comes first.
        var firstSeen: [String: Date] = [:]
        for (message, at) in planned { firstSeen[message.deliveryId] = min(firstSeen[message.deliveryId] ?? at, at) }
        for id in resultOrder {
            let (message, outcome) = results[id]!
            firstSeen[message.deliveryId] = min(firstSeen[message.deliveryId] ?? outcome.at, outcome.at)
        }
        if !firstSeen.isEmpty {
            let deliveries = firstSeen.keys.sorted()
            try await connection.query(
                """
                INSERT INTO push.broad_log_deliveries (delivery_id, log_month)
                SELECT x.d, date_trunc('month', coalesce(dl.send_at, x.at) AT TIME ZONE 'UTC')::date
                FROM unnest(\(deliveries)::text[], \(deliveries.map { firstSeen[$0]! })::timestamptz[]) AS x(d, at)
                LEFT JOIN push.deliveries dl ON dl.delivery_id = x.d
                ORDER BY x.d
                ON CONFLICT (delivery_id) DO NOTHING
                """,
                logger: logger
            )
        }
        if !planned.isEmpty {
            try await connection.query(
                """
                INSERT INTO push.broad_log (message_id, broad_log_id, delivery_id, app_id, registration_token, platform, status, attempts, created_at, updated_at,
                                            log_month)
                SELECT m, nullif(b, 0), d, a, t, p, 'pending', 0, c, c, k.log_month
                FROM unnest(\(planned.map(\.0.messageId))::uuid[], \(planned.map { $0.0.broadLogId ?? 0 })::int[], \(planned.map(\.0.deliveryId))::text[],
                            \(planned.map(\.0.appId))::uuid[], \(planned.map(\.0.registrationToken))::text[], \(planned.map(\.0.platform.rawValue))::text[],
                            \(planned.map(\.1))::timestamptz[]) AS x(m, b, d, a, t, p, c)
                JOIN push.broad_log_deliveries k ON k.delivery_id = x.d
                WHERE NOT EXISTS (
                    SELECT 1 FROM push.erased_devices e WHERE e.app_id = x.a AND e.token_digest = push.token_digest(x.t) AND x.c <= e.erased_at)
                ON CONFLICT (message_id, log_month) DO UPDATE SET created_at = least(push.broad_log.created_at, excluded.created_at),
                    broad_log_id = coalesce(push.broad_log.broad_log_id, excluded.broad_log_id)
                """,
                logger: logger
            )
        }
        if !resultOrder.isEmpty {
            let rows = resultOrder.map { results[$0]! }
            // The CTE returns only the rows this statement created or moved out of `pending`: a
            // result for a message already final is skipped by the WHERE and returns nothing, so
            // each message adds to its delivery's counters exactly once. Deliveries are locked in
            // key order (no deadlock with the tracking projection's increments).
            try await connection.query(
                """
                WITH changed AS (
                INSERT INTO push.broad_log AS b (message_id, broad_log_id, delivery_id, app_id, registration_token, platform, status, failure_type,
                                                 failure_reason, provider_message_id, attempts, created_at, updated_at, sent_at, log_month)
                SELECT m, nullif(bl, 0), d, a, t, p, s, nullif(ft, ''), nullif(fr, ''), nullif(pm, ''), n, at, at, CASE WHEN s = 'sent' THEN at END,
                       k.log_month
                FROM unnest(\(rows.map(\.0.messageId))::uuid[], \(rows.map { $0.0.broadLogId ?? 0 })::int[], \(rows.map(\.0.deliveryId))::text[], \(rows.map(\.0.appId))::uuid[],
                            \(rows.map(\.0.registrationToken))::text[], \(rows.map(\.0.platform.rawValue))::text[], \(rows.map(\.1.status))::text[],
                            \(rows.map { $0.1.failureType ?? "" })::text[], \(rows.map { $0.1.reason ?? "" })::text[], \(rows.map { $0.1.providerMessageId ?? "" })::text[],
                            \(rows.map(\.1.attempts))::int[], \(rows.map(\.1.at))::timestamptz[]) AS x(m, bl, d, a, t, p, s, ft, fr, pm, n, at)
                JOIN push.broad_log_deliveries k ON k.delivery_id = x.d
                WHERE EXISTS (SELECT 1 FROM push.broad_log r WHERE r.message_id = x.m AND r.log_month = k.log_month)
                   OR NOT EXISTS (
                       SELECT 1 FROM push.erased_devices e
                       WHERE e.app_id = x.a AND e.token_digest = push.token_digest(x.t)
                         AND NOT EXISTS (SELECT 1 FROM push.deliveries dl WHERE dl.delivery_id = x.d AND dl.accepted_at > e.erased_at))
                ON CONFLICT (message_id, log_month) DO UPDATE SET status = excluded.status, broad_log_id = coalesce(b.broad_log_id, excluded.broad_log_id),
                    failure_type = excluded.failure_type,
                    failure_reason = excluded.failure_reason, provider_message_id = excluded.provider_message_id,
                    attempts = excluded.attempts, updated_at = excluded.updated_at, sent_at = excluded.sent_at
                WHERE b.status = 'pending'
                RETURNING b.delivery_id, b.status, b.failure_type
                )
                INSERT INTO push.delivery_indicator_counts AS c (delivery_id, sent, failed, failed_hard, failed_soft, failed_ignored, expired, cancelled,
                                                                 updated_at)
                SELECT delivery_id, count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
                       count(*) FILTER (WHERE failure_type = 'hard'), count(*) FILTER (WHERE failure_type = 'soft'),
                       count(*) FILTER (WHERE failure_type = 'ignored'), count(*) FILTER (WHERE status = 'expired'),
                       count(*) FILTER (WHERE status = 'cancelled'), now()
                FROM changed GROUP BY delivery_id ORDER BY delivery_id
                ON CONFLICT (delivery_id) DO UPDATE SET
                    sent = c.sent + excluded.sent, failed = c.failed + excluded.failed,
                    failed_hard = c.failed_hard + excluded.failed_hard, failed_soft = c.failed_soft + excluded.failed_soft,
                    failed_ignored = c.failed_ignored + excluded.failed_ignored, expired = c.expired + excluded.expired,
                    cancelled = c.cancelled + excluded.cancelled, updated_at = excluded.updated_at
                """,
                logger: logger
            )
        }
    }
}
