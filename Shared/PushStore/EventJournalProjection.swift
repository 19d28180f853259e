import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents

/// Writes the envelope metadata of every event on its topics into `push.event_journal`: an
/// audit trail analysts can join on correlation id, and the projection the smoke run shows.
///
/// It inserts without any uniqueness guard on purpose: exactly-once rows come from the
/// `ProjectionRunner`, and the crash tests count rows to prove it.
package struct EventJournalProjection: Projection {
    package let name: String
    package let topics: [String]

    package init(name: String = "push-event-journal", topics: [String]) {
        self.name = name
        self.topics = topics
    }

    package func decode(_ record: KafkaConsumerRecord) throws -> EventMetadata? {
        try EventMetadata.decode(record.value)
    }

    package func apply(_ events: [ProjectedEvent<EventMetadata>], on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO push.event_journal (topic, partition, "offset", event_id, type, version, aggregate_key, occurred_at, correlation_id)
            SELECT t, p, o, i, ty, v, k, at, NULLIF(c, '')
            FROM unnest(
                \(events.map(\.topic))::text[], \(events.map(\.partition))::int[], \(events.map(\.offset))::bigint[],
                \(events.map(\.event.id))::uuid[], \(events.map(\.event.type))::text[], \(events.map { Int32($0.event.version) })::int[],
                \(events.map(\.event.key))::text[], \(events.map(\.event.occurredAt))::timestamptz[],
                \(events.map { $0.event.correlationId ?? "" })::text[]
            ) AS x(t, p, o, i, ty, v, k, at, c)
            """,
            logger: logger
        )
    }

    /// What the journal holds of one correlation id: rows, distinct event ids and the first and
    /// last time they occurred (nil when it holds none). What the smoke run checks and shows.
    package static func summary(correlationId: String, postgres: PostgresClient, logger: Logger) async throws -> (
        rows: Int, distinctEvents: Int, first: Date, last: Date
    )? {
        let rows = try await postgres.query(
            """
            SELECT count(*)::int, count(DISTINCT event_id)::int, min(occurred_at), max(occurred_at)
            FROM push.event_journal WHERE correlation_id = \(correlationId) HAVING count(*) > 0
            """,
            logger: logger)
        for try await (count, distinct, first, last) in rows.decode((Int, Int, Date, Date).self) { return (count, distinct, first, last) }
        return nil
    }
}
