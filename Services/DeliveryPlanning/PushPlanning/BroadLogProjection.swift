import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushStore

/// Keeps `push.broad_log`, one row per message, from `push.message-results`: a message's row is
/// written once, by its outcome (`sent`, `failed`, `expired`, `cancelled`), which never changes.
/// A message handed to a sender and without an outcome yet has no row: the delivery's pending
/// count is `to_deliver - processed` (`push.delivery_indicators`). Reading the message topics
/// back for a `pending` row per planned message, as earlier versions did, cost a second write
/// and a decode of the planner's own records per message, and queued the results behind the
/// fan-out's pending rows (docs/benchmarks.md, "One write per message"). Rows an earlier
/// version left `pending` take their result as before.
///
/// A batch is merged per message (the same result read twice, a replay, is one row), copied
/// into a staging table with `COPY` and merged by one statement (docs/architecture.md,
/// "Projections through COPY"). `created_at` is the result's `message.plannedAt` (the result's
/// time for a result written before it existed); the device's token comes from
/// `push.subscriptions` while the device is there (results name it by digest).
///
/// It also keeps the outcome counters of `push.delivery_indicator_counts` (sent, failed by type,
/// expired, cancelled) in the same statement: only a row that this batch creates, or moves out of
/// an older version's `pending`, counts, so a repeated or late result never counts twice.
///
/// Devices erased (`push.erased_devices`) are not logged again: a result that would
/// create the row of an erased device is skipped unless its delivery was accepted after the
/// erasure (a person who came back with the same token is logged again), so a replay does not
/// bring the erased person's rows back; a skipped result counts in no indicator
/// (docs/architecture.md, "Erasure").
///
/// `push.broad_log` is partitioned by `log_month` (the delivery's UTC month), one value per
/// delivery kept in `push.broad_log_deliveries` (migration 18): all of a delivery's rows share
/// it, and retention drops whole deliveries.
package struct BroadLogProjection: EnvelopeProjection {
    package struct Outcome: Sendable {
        var message: MessageReference
        var status: String
        var failureType: String?
        var reason: String?
        var providerMessageId: String?
        var attempts: Int
        var at: Date
    }

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<Outcome>
    /// Up to 5,000 records a batch (the consumer's default is 500): the batch is one `COPY` and
    /// one merge, so its round trips and offsets are paid per batch (docs/benchmarks.md).
    package var batchSize: Int? { 5_000 }

    package init(name: String = "push-broad-log-projection", catalog: TopicCatalog) {
        self.name = name
        self.topics = [catalog.messageResults.name]
        var decoder = EventDecoder<Outcome>()
        // Results of both versions: version 1 named the device by its token, which the reader
        // turns into its digest (`MessageReference`).
        for version in 1...2 {
            decoder.register(MessageSent.self, version: version) { event, _ in
                Outcome(message: event.message, status: "sent", providerMessageId: event.providerMessageId, attempts: event.attempts, at: event.sentAt)
            }
            decoder.register(MessageFailed.self, version: version) { event, _ in
                Outcome(
                    message: event.message, status: "failed", failureType: event.failureType, reason: event.reason, attempts: event.attempts,
                    at: event.failedAt)
            }
            decoder.register(MessageExpired.self, version: version) { event, _ in
                Outcome(message: event.message, status: "expired", attempts: event.attempts, at: event.expiredAt)
            }
            decoder.register(MessageCancelled.self, version: version) { event, _ in
                Outcome(message: event.message, status: "cancelled", attempts: event.attempts, at: event.cancelledAt)
            }
        }
        self.decoder = decoder
    }

    /// The batch's first result per message, in the order their messages first appear (the
    /// first result wins, as it would record by record).
    static func merged(_ events: [ProjectedEvent<Outcome>]) -> [Outcome] {
        var seen = Set<UUID>(minimumCapacity: events.count)
        var merged: [Outcome] = []
        merged.reserveCapacity(events.count)
        for projected in events where seen.insert(projected.event.message.messageId).inserted {
            merged.append(projected.event)
        }
        return merged
    }

    package func apply(_ events: [ProjectedEvent<Outcome>], on connection: PostgresConnection, logger: Logger) async throws {
        let outcomes = Self.merged(events)
        // The partition key of every delivery this batch names, fixed by the first batch that
        // writes a row of it (the month its fan-out may start, `deliveries.send_at`, when the
        // deliveries projection has it, else of the batch's earliest planned time of it).
        var firstSeen: [String: Date] = [:]
        for outcome in outcomes {
            let at = outcome.message.plannedAt ?? outcome.at
            firstSeen[outcome.message.deliveryId] = min(firstSeen[outcome.message.deliveryId] ?? at, at)
        }
        guard !firstSeen.isEmpty else { return }
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

        // The batch, one row per message, is copied into this connection's staging table (COPY:
        // no parameters per message), then merged by one statement.
        var rows = CopyTextRows(capacity: outcomes.count * 256)
        for outcome in outcomes {
            let message = outcome.message
            rows.uuid(message.messageId)
            rows.int(message.broadLogId)
            rows.text(message.deliveryId)
            rows.uuid(message.appId)
            rows.text(message.tokenDigest)
            rows.text(message.platform.rawValue)
            rows.timestamp(message.plannedAt ?? outcome.at)
            rows.text(outcome.status)
            rows.text(outcome.failureType)
            rows.text(outcome.reason)
            rows.text(outcome.providerMessageId)
            rows.int(outcome.attempts)
            rows.timestamp(outcome.at)
            rows.text(message.language)
            rows.text(message.variant)
            rows.endRow()
        }
        try await connection.stage(
            rows, into: "broad_log_stage",
            definition: """
                message_id uuid, broad_log_id integer, delivery_id text, app_id uuid, token_digest text, platform text, planned_at timestamptz,
                status text, failure_type text, failure_reason text, provider_message_id text, attempts integer, result_at timestamptz,
                language text, variant text
                """,
            columns: [
                "message_id", "broad_log_id", "delivery_id", "app_id", "token_digest", "platform", "planned_at", "status", "failure_type",
                "failure_reason", "provider_message_id", "attempts", "result_at", "language", "variant",
            ], logger: logger)

        // A result writes its message's row unless the device was erased and the delivery not
        // accepted after the erasure (a row an older version left `pending` is updated
        // whatever the erasure: it was there). On a conflict only a `pending` row changes (a
        // final status is never overwritten); `changed` returns the rows this statement created
        // or moved out of `pending`, so each message adds to its delivery's counters exactly
        // once. Deliveries' counters are locked in key order (no deadlock with the tracking
        // projection's increments).
        try await connection.query(
            """
            WITH staged AS (
                SELECT s.*, k.log_month
                FROM broad_log_stage s JOIN push.broad_log_deliveries k ON k.delivery_id = s.delivery_id
            ), changed AS (
                INSERT INTO push.broad_log AS b (message_id, broad_log_id, delivery_id, app_id, registration_token, token_digest, platform, status,
                                                 failure_type, failure_reason, provider_message_id, attempts, created_at, updated_at, sent_at, log_month,
                                                 language, variant)
                SELECT message_id, broad_log_id, delivery_id, app_id,
                       (SELECT d.registration_token FROM push.subscriptions d WHERE d.app_id = staged.app_id AND d.token_digest = staged.token_digest),
                       token_digest, platform, status, failure_type, failure_reason, provider_message_id, attempts,
                       least(planned_at, result_at), result_at, CASE WHEN status = 'sent' THEN result_at END, log_month, language, variant
                FROM staged
                WHERE NOT EXISTS (
                          SELECT 1 FROM push.erased_devices e
                          WHERE e.app_id = staged.app_id AND e.token_digest = staged.token_digest
                            AND NOT EXISTS (SELECT 1 FROM push.deliveries dl WHERE dl.delivery_id = staged.delivery_id AND dl.accepted_at > e.erased_at))
                   OR EXISTS (SELECT 1 FROM push.broad_log r WHERE r.message_id = staged.message_id AND r.log_month = staged.log_month)
                ORDER BY message_id
                ON CONFLICT (message_id, log_month) DO UPDATE SET
                    broad_log_id = coalesce(b.broad_log_id, excluded.broad_log_id),
                    registration_token = coalesce(b.registration_token, excluded.registration_token),
                    status = excluded.status, failure_type = excluded.failure_type, failure_reason = excluded.failure_reason,
                    provider_message_id = excluded.provider_message_id, attempts = excluded.attempts,
                    updated_at = excluded.updated_at, sent_at = excluded.sent_at
                WHERE b.status = 'pending'
                RETURNING b.message_id, b.delivery_id, b.status, b.failure_type
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
