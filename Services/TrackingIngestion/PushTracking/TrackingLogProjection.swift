import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushStore

/// Keeps `push.tracking_log` from `push.tracking`: one row per tracking hit.
///
/// Exactly once comes from the `ProjectionRunner` (rows and offsets commit together); the
/// `(tracking_id, occurred_at)` primary key (the table is partitioned by `occurred_at`, migration
/// 18; both come from the event) with `ON CONFLICT DO NOTHING` is a second guard, so a record that
/// is read again (a rebuild into a table that was not emptied) cannot add a row either. Two hits
/// of the same device are two events with two tracking ids, and stay two rows.
///
/// The same transaction keeps the delivery's `impressions` and `opens` in
/// `push.delivery_indicator_counts`: `push.tracking_firsts` holds one row per (delivery, message,
/// kind) with a received or opened hit, and only a newly inserted first adds one, so duplicate
/// hits count once.
package struct TrackingLogProjection: EnvelopeProjection {
    package typealias Event = TrackingHitRecorded

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<TrackingHitRecorded>
    /// Up to 5,000 records a batch (the consumer's default is 500): the batch is one `COPY` and
    /// one merge, so its round trips and offsets are paid per batch (docs/benchmarks.md).
    package var batchSize: Int? { 5_000 }

    package init(name: String = "push-tracking-log-projection", topic: String) {
        self.name = name
        self.topics = [topic]
        var decoder = EventDecoder<TrackingHitRecorded>()
        decoder.register(TrackingHitRecorded.self) { event, _ in event }
        self.decoder = decoder
    }

    package func decode(_ record: KafkaConsumerRecord) throws -> TrackingHitRecorded? {
        // The hand-written reader, one parse per hit (the decoder only for what it does not read).
        switch try TrackingHitRecorded.decodeRecord(record.value) {
        case .known(let hit, _):
            // The table's CHECK would refuse these and stall the runner on retries; a record
            // that can never be stored belongs in the dead-letter topic instead.
            guard TrackingKind(rawValue: hit.kind) != nil else {
                throw EventDecodingError(reason: .invalidPayload, detail: "TrackingHitRecorded v1: kind must be received, opened or other")
            }
            guard hit.messageIdForm == "uuid" || hit.messageIdForm == "decimal" else {
                throw EventDecodingError(reason: .invalidPayload, detail: "TrackingHitRecorded v1: messageIdForm must be uuid or decimal")
            }
            return hit
        case .unknown:
            return nil
        }
    }

    package func apply(_ events: [ProjectedEvent<TrackingHitRecorded>], on connection: PostgresConnection, logger: Logger) async throws {
        // The batch is copied into this connection's staging table (COPY, no parameters per
        // hit), then merged by one statement.
        var rows = CopyTextRows(capacity: events.count * 200)
        for projected in events {
            let hit = projected.event
            rows.uuid(hit.trackingId)
            rows.text(hit.messageId)
            rows.text(hit.messageIdForm)
            rows.int(hit.broadLogId)
            rows.text(hit.deliveryId)
            rows.int(Int(hit.tagId))
            rows.text(hit.kind)
            rows.timestamp(hit.occurredAt)
            rows.int(Int(projected.partition))
            rows.int(Int(projected.offset))
            rows.endRow()
        }
        try await connection.stage(
            rows, into: "tracking_log_stage",
            definition: """
                tracking_id uuid, message_id text, message_id_form text, broad_log_id integer, delivery_id text, tag_id integer, kind text,
                occurred_at timestamptz, kafka_partition integer, kafka_offset bigint
                """,
            columns: [
                "tracking_id", "message_id", "message_id_form", "broad_log_id", "delivery_id", "tag_id", "kind", "occurred_at", "kafka_partition",
                "kafka_offset",
            ], logger: logger)
        // One statement: the hits, then the (delivery, message, kind) pairs seen for the first
        // time among the rows really inserted, then those firsts added to the delivery's
        // impressions and opens (locked in key order, as every writer of the counters does).
        try await connection.query(
            """
            WITH hits AS (
                INSERT INTO push.tracking_log (
                    tracking_id, message_id, message_id_form, broad_log_id, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset)
                SELECT tracking_id, message_id, message_id_form, broad_log_id, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset
                FROM tracking_log_stage
                ON CONFLICT (tracking_id, occurred_at) DO NOTHING
                RETURNING delivery_id, message_id, kind, occurred_at
            ), firsts AS (
                INSERT INTO push.tracking_firsts (delivery_id, message_id, kind, first_at)
                SELECT DISTINCT ON (delivery_id, message_id, kind) delivery_id, message_id, kind, occurred_at
                FROM hits WHERE kind IN ('received', 'opened')
                ORDER BY delivery_id, message_id, kind, occurred_at
                ON CONFLICT DO NOTHING
                RETURNING delivery_id, kind
            )
            INSERT INTO push.delivery_indicator_counts AS c (delivery_id, impressions, opens, updated_at)
            SELECT delivery_id, count(*) FILTER (WHERE kind = 'received'), count(*) FILTER (WHERE kind = 'opened'), now()
            FROM firsts GROUP BY delivery_id ORDER BY delivery_id
            ON CONFLICT (delivery_id) DO UPDATE SET
                impressions = c.impressions + excluded.impressions, opens = c.opens + excluded.opens, updated_at = excluded.updated_at
            """,
            logger: logger
        )
    }
}

extension TrackingHitRecorded {
    /// The broadLog id (`push.broad_log.broad_log_id`) a decimal message id names: the payload's
    /// `_mId` of the messages this channel plans, a positive 32-bit integer. Nil for a UUID, and
    /// for a decimal id no message of this channel can have (zero, negative, beyond 32 bits).
    package var broadLogId: Int32? {
        guard messageIdForm == "decimal", let id = Int32(messageId), id > 0 else { return nil }
        return id
    }
}
