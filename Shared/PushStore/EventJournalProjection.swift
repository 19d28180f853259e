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
///
/// A key that names a device by its registration token (`<appId>:<token>`, the records of
/// version 1 written before issue 28) is journaled as `<appId>:<tokenDigest>`, as every later
/// record is keyed: the journal keeps no token an erasure would have to find (migration 42 did
/// the same to the version-1 rows journaled before).
package struct EventJournalProjection: Projection {
    package let name: String
    package let topics: [String]

    package init(name: String = "push-event-journal", topics: [String]) {
        self.name = name
        self.topics = topics
    }

    package func decode(_ record: KafkaConsumerRecord) throws -> EventMetadata? {
        var metadata = try EventMetadata.decode(record.value)
        metadata.key = Self.journalKey(metadata, value: record.value)
        return metadata
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

    /// The event types whose key names a device by its registration token in version 1.
    static let tokenKeyedV1: Set<String> = [
        "SubscriptionRegistered", "SubscriptionDisabled", "SubscriptionReenabled", "SubscriptionPurged", "APNSMessagePlanned", "FCMMessagePlanned",
    ]

    /// Whether a message record's payload is sealed (its key then holds the token's digest).
    struct SealedProbe: Decodable {
        var sealed: Bool
        enum Keys: String, CodingKey { case data, sealed }
        init(from decoder: any Decoder) throws {
            let data = try decoder.container(keyedBy: Keys.self).nestedContainer(keyedBy: Keys.self, forKey: .data)
            sealed = data.contains(.sealed)
        }
    }

    /// The key the journal keeps for `metadata`: `<appId>:<tokenDigest>` where the record's key
    /// is `<appId>:<token>` (a version-1 subscription or message event, or a message of version
    /// 2 without `sealed`: a sender's retry of a version-1 record), the key as it is otherwise.
    package static func journalKey(_ metadata: EventMetadata, value: [UInt8]) -> String {
        guard tokenKeyedV1.contains(metadata.type) else { return metadata.key }
        if metadata.version > 1 {
            guard metadata.type.hasSuffix("MessagePlanned"), (try? JSONDecoder().decode(SealedProbe.self, from: Data(value)))?.sealed == false else {
                return metadata.key
            }
        }
        let key = metadata.key
        guard key.utf8.count > 37, key.utf8[key.utf8.index(key.utf8.startIndex, offsetBy: 36)] == UInt8(ascii: ":") else { return key }
        return "\(key.prefix(36)):\(TokenDigest.of(String(key.dropFirst(37))))"
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
