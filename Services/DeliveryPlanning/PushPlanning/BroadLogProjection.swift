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
/// overwritten by `pending` or by a later result. A batch is merged per message (a planned
/// message and its result in one batch are one row, written once), copied into a staging table
/// with `COPY` and merged by one statement (docs/architecture.md, "Projections through COPY").
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
        /// The message, its device's token (in clear on version-1 records; nil from a sealed
        /// one), when it was planned.
        case planned(MessageReference, token: String?, Date)
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
    /// Up to 5,000 records a batch (the consumer's default is 500): the batch is one `COPY` and
    /// one merge, so its round trips and offsets are paid per batch (docs/benchmarks.md).
    package var batchSize: Int? { 5_000 }

    package init(name: String = "push-broad-log-projection", catalog: TopicCatalog) {
        self.name = name
        self.topics = catalog.messageTopics.map(\.name) + [catalog.messageResults.name]
        var decoder = EventDecoder<Event>()
        // Planned records of both versions: a sealed one (version 2) names the device by digest
        // only, and the row's token comes from `push.subscriptions`.
        for version in 1...2 {
            decoder.register(APNSMessagePlanned.self, version: version) { event, _ in
                .planned(
                    MessageReference(
                        messageId: event.messageId, broadLogId: event.broadLogId, deliveryId: event.deliveryId, appId: event.appId,
                        tokenDigest: event.tokenDigest, platform: .ios),
                    token: event.sealing == nil ? event.registrationToken : nil, event.plannedAt)
            }
            decoder.register(FCMMessagePlanned.self, version: version) { event, _ in
                .planned(
                    MessageReference(
                        messageId: event.messageId, broadLogId: event.broadLogId, deliveryId: event.deliveryId, appId: event.appId,
                        tokenDigest: event.tokenDigest, platform: .android),
                    token: event.sealing == nil ? event.registrationToken : nil, event.plannedAt)
            }
        }
        // Results of both versions: version 1 named the device by its token, which the reader
        // turns into its digest (`MessageReference`); the row's token comes from the planned
        // record or from `push.subscriptions`.
        for version in 1...2 {
            decoder.register(MessageSent.self, version: version) { event, _ in
                .result(event.message, Outcome(status: "sent", providerMessageId: event.providerMessageId, attempts: event.attempts, at: event.sentAt))
            }
            decoder.register(MessageFailed.self, version: version) { event, _ in
                .result(
                    event.message,
                    Outcome(status: "failed", failureType: event.failureType, reason: event.reason, attempts: event.attempts, at: event.failedAt))
            }
            decoder.register(MessageExpired.self, version: version) { event, _ in
                .result(event.message, Outcome(status: "expired", attempts: event.attempts, at: event.expiredAt))
            }
            decoder.register(MessageCancelled.self, version: version) { event, _ in
                .result(event.message, Outcome(status: "cancelled", attempts: event.attempts, at: event.cancelledAt))
            }
        }
        self.decoder = decoder
    }

    /// A message's events in one batch: its earliest planned event and its first result (the
    /// first result per message wins, as it would record by record).
    struct MessageEvents {
        var message: MessageReference
        /// The token, from an unsealed planned record (results and sealed records carry only its digest).
        var token: String?
        var plannedAt: Date?
        var outcome: Outcome?
    }

    /// The batch's events merged per message, in the order their messages first appear: a
    /// planned message and its result in one batch become one row to write, and the same event
    /// read twice (a replay) one.
    static func merged(_ events: [ProjectedEvent<Event>]) -> [MessageEvents] {
        var position: [UUID: Int] = [:]
        position.reserveCapacity(events.count)
        var merged: [MessageEvents] = []
        merged.reserveCapacity(events.count)
        for projected in events {
            switch projected.event {
            case .planned(let message, let token, let at):
                if let index = position[message.messageId] {
                    merged[index].plannedAt = min(merged[index].plannedAt ?? at, at)
                    merged[index].token = merged[index].token ?? token
                    if merged[index].message.broadLogId == nil { merged[index].message.broadLogId = message.broadLogId }
                } else {
                    position[message.messageId] = merged.count
                    merged.append(MessageEvents(message: message, token: token, plannedAt: at))
                }
            case .result(let message, let outcome):
                if let index = position[message.messageId] {
                    if merged[index].outcome == nil { merged[index].outcome = outcome }
                    if merged[index].message.broadLogId == nil { merged[index].message.broadLogId = message.broadLogId }
                } else {
                    position[message.messageId] = merged.count
                    merged.append(MessageEvents(message: message, outcome: outcome))
                }
            }
        }
        return merged
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        let messages = Self.merged(events)
        // The partition key of every delivery this batch names, fixed by the first batch that
        // writes a row of it (the month its fan-out may start, `deliveries.send_at`, when the deliveries projection has it,
        // else of the batch's earliest event of it) and read back by the merge below: all of a
        // delivery's rows share one `log_month`, whichever of its events comes first.
        var firstSeen: [String: Date] = [:]
        for entry in messages {
            let at = [entry.plannedAt, entry.outcome?.at].compactMap { $0 }.min()!
            firstSeen[entry.message.deliveryId] = min(firstSeen[entry.message.deliveryId] ?? at, at)
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
        var rows = CopyTextRows(capacity: messages.count * 256)
        for entry in messages {
            let message = entry.message
            rows.uuid(message.messageId)
            rows.int(message.broadLogId)
            rows.text(message.deliveryId)
            rows.uuid(message.appId)
            rows.text(entry.token)
            rows.text(message.tokenDigest)
            rows.text(message.platform.rawValue)
            rows.timestamp(entry.plannedAt)
            rows.text(entry.outcome?.status)
            rows.text(entry.outcome?.failureType)
            rows.text(entry.outcome?.reason)
            rows.text(entry.outcome?.providerMessageId)
            if let outcome = entry.outcome { rows.int(outcome.attempts) } else { rows.null() }
            rows.timestamp(entry.outcome?.at)
            rows.endRow()
        }
        try await connection.stage(
            rows, into: "broad_log_stage",
            definition: """
                message_id uuid, broad_log_id integer, delivery_id text, app_id uuid, registration_token text, token_digest text, platform text,
                planned_at timestamptz,
                status text, failure_type text, failure_reason text, provider_message_id text, attempts integer, result_at timestamptz
                """,
            columns: [
                "message_id", "broad_log_id", "delivery_id", "app_id", "registration_token", "token_digest", "platform", "planned_at", "status",
                "failure_type",
                "failure_reason", "provider_message_id", "attempts", "result_at",
            ], logger: logger)

        // `planned`: the planned event applies unless the device was erased at or after it was
        // planned. `final`: the result applies when the row exists or is created by this batch's
        // planned event, or else unless the device was erased and the delivery not accepted
        // after the erasure. A message's row is then written once: pending, or already final.
        //
        // On a conflict only a `pending` row changes (a final status is never overwritten, by a
        // pending row or a later result); `changed` returns the rows this statement created or
        // moved out of `pending`, so each message adds to its delivery's counters exactly once.
        // A planned event of a message already final still lowers its `created_at` and fills its
        // broadLog id (`touched`), as the planned upsert always did, and its token when the
        // result that wrote the row (by digest) found no subscription to take it from (a replay
        // into an empty database reads results before the subscriptions are back). Deliveries' counters are
        // locked in key order (no deadlock with the tracking projection's increments).
        try await connection.query(
            """
            WITH staged AS (
                SELECT s.*, k.log_month,
                       s.planned_at IS NOT NULL AND NOT EXISTS (
                           SELECT 1 FROM push.erased_devices e
                           WHERE e.app_id = s.app_id AND e.token_digest = s.token_digest AND s.planned_at <= e.erased_at
                       ) AS planned
                FROM broad_log_stage s JOIN push.broad_log_deliveries k ON k.delivery_id = s.delivery_id
            ), merged AS (
                SELECT staged.*, status IS NOT NULL AND (
                           planned
                           OR NOT EXISTS (
                               SELECT 1 FROM push.erased_devices e
                               WHERE e.app_id = staged.app_id AND e.token_digest = staged.token_digest
                                 AND NOT EXISTS (SELECT 1 FROM push.deliveries dl WHERE dl.delivery_id = staged.delivery_id AND dl.accepted_at > e.erased_at))
                           OR EXISTS (SELECT 1 FROM push.broad_log r WHERE r.message_id = staged.message_id AND r.log_month = staged.log_month)
                       ) AS final
                FROM staged
            ), changed AS (
                INSERT INTO push.broad_log AS b (message_id, broad_log_id, delivery_id, app_id, registration_token, token_digest, platform, status,
                                                 failure_type, failure_reason, provider_message_id, attempts, created_at, updated_at, sent_at, log_month)
                SELECT message_id, broad_log_id, delivery_id, app_id,
                       -- A result alone names the device by digest: its token from the subscription while there is one.
                       coalesce(registration_token, (SELECT d.registration_token FROM push.subscriptions d
                                                     WHERE d.app_id = merged.app_id AND d.token_digest = merged.token_digest)),
                       token_digest, platform,
                       CASE WHEN final THEN status ELSE 'pending' END,
                       CASE WHEN final THEN failure_type END, CASE WHEN final THEN failure_reason END, CASE WHEN final THEN provider_message_id END,
                       CASE WHEN final THEN attempts ELSE 0 END,
                       CASE WHEN planned AND final THEN least(planned_at, result_at) WHEN planned THEN planned_at ELSE result_at END,
                       CASE WHEN final THEN result_at ELSE planned_at END,
                       CASE WHEN final AND status = 'sent' THEN result_at END,
                       log_month
                FROM merged WHERE planned OR final
                ORDER BY message_id
                ON CONFLICT (message_id, log_month) DO UPDATE SET
                    -- A planned event lowers created_at (a result alone leaves it: created_at = updated_at).
                    created_at = CASE WHEN excluded.status = 'pending' OR excluded.created_at < excluded.updated_at
                                      THEN least(b.created_at, excluded.created_at) ELSE b.created_at END,
                    broad_log_id = coalesce(b.broad_log_id, excluded.broad_log_id),
                    registration_token = coalesce(b.registration_token, excluded.registration_token),
                    status = excluded.status,
                    failure_type = CASE WHEN excluded.status <> 'pending' THEN excluded.failure_type ELSE b.failure_type END,
                    failure_reason = CASE WHEN excluded.status <> 'pending' THEN excluded.failure_reason ELSE b.failure_reason END,
                    provider_message_id = CASE WHEN excluded.status <> 'pending' THEN excluded.provider_message_id ELSE b.provider_message_id END,
                    attempts = CASE WHEN excluded.status <> 'pending' THEN excluded.attempts ELSE b.attempts END,
                    updated_at = CASE WHEN excluded.status <> 'pending' THEN excluded.updated_at ELSE b.updated_at END,
                    sent_at = CASE WHEN excluded.status <> 'pending' THEN excluded.sent_at ELSE b.sent_at END
                WHERE b.status = 'pending'
                  AND (excluded.status <> 'pending' OR excluded.created_at < b.created_at OR (b.broad_log_id IS NULL AND excluded.broad_log_id IS NOT NULL))
                RETURNING b.message_id, b.delivery_id, b.status, b.failure_type
            ), touched AS (
                UPDATE push.broad_log b SET created_at = least(b.created_at, m.planned_at), broad_log_id = coalesce(b.broad_log_id, m.broad_log_id),
                                            registration_token = coalesce(b.registration_token, m.registration_token)
                FROM merged m
                WHERE m.planned AND b.message_id = m.message_id AND b.log_month = m.log_month AND b.status <> 'pending'
                  AND NOT EXISTS (SELECT 1 FROM changed c WHERE c.message_id = m.message_id)
                  AND (m.planned_at < b.created_at OR (b.broad_log_id IS NULL AND m.broad_log_id IS NOT NULL)
                       OR (b.registration_token IS NULL AND m.registration_token IS NOT NULL))
            )
            INSERT INTO push.delivery_indicator_counts AS c (delivery_id, sent, failed, failed_hard, failed_soft, failed_ignored, expired, cancelled,
                                                             updated_at)
            SELECT delivery_id, count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
                   count(*) FILTER (WHERE failure_type = 'hard'), count(*) FILTER (WHERE failure_type = 'soft'),
                   count(*) FILTER (WHERE failure_type = 'ignored'), count(*) FILTER (WHERE status = 'expired'),
                   count(*) FILTER (WHERE status = 'cancelled'), now()
            FROM changed WHERE status <> 'pending' GROUP BY delivery_id ORDER BY delivery_id
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
