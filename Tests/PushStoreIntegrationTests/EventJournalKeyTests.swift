import Foundation
import Kafka
import PostgresNIO
import PushEvents
import PushSchema
import PushStore
import Testing

/// The event journal keeps no registration token (issue 43, "Erasure without gaps"): the key
/// `<appId>:<token>` of a version-1 record (or of an unsealed message a sender retried) is
/// journaled as `<appId>:<tokenDigest>`, and migration 42 rewrites the version-1 rows journaled
/// before. Runs in a scratch database.
@Suite("The event journal keeps token digests, not registration tokens")
struct EventJournalKeyTests {
    static let app = "6b2e3f0a-1c4d-4e5f-8a9b-0c1d2e3f4a5b"
    /// An APNs token: 64 hex digits, the shape of a digest too.
    static let token = "a1b2c3d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90"

    /// A record as the topics hold it: the envelope's fields and its `data`.
    static func record(_ type: String, version: Int, key: String, data: String = "{}", offset: Int64) -> KafkaConsumerRecord {
        let json =
            #"{"id":"\#(UUID().uuidString.lowercased())","type":"\#(type)","version":\#(version),"occurredAt":"2026-12-01T08:00:00Z","key":"\#(key)","data":\#(data)}"#
        return KafkaConsumerRecord(topic: "push.subscriptions", partition: 0, offset: offset, key: Array(key.utf8), value: Array(json.utf8))
    }

    @Test("the projection journals version-1 and unsealed message keys under the token's digest, others as they are; migration 42 rewrites older rows")
    func projectionAndMigration() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_journal_keys") { client, _ in
            let logger = StoreTestSupport.logger
            try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all.filter { $0.version < 42 })
            // Rows journaled before: a version-1 registration with a token, a version-2 one with a digest, an erasure.
            let digest = TokenDigest.of(Self.token)
            for (offset, (version, key)) in [(1, "\(Self.app):\(Self.token)"), (2, "\(Self.app):\(digest)"), (1, "erasure:e-1")].enumerated() {
                try await client.query(
                    """
                    INSERT INTO push.event_journal (topic, partition, "offset", event_id, type, version, aggregate_key, occurred_at)
                    VALUES ('push.subscriptions', 0, \(Int64(offset)), \(UUID()), 'SubscriptionRegistered', \(version), \(key), now())
                    """, logger: logger)
            }
            #expect(try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all).first == 42)

            // Records read now.
            let projection = EventJournalProjection(topics: ["push.subscriptions"])
            let records = [
                Self.record("SubscriptionRegistered", version: 1, key: "\(Self.app):\(Self.token)", offset: 3),
                Self.record("APNSMessagePlanned", version: 2, key: "\(Self.app):\(Self.token)", data: #"{"attempt":2}"#, offset: 4),
                Self.record("APNSMessagePlanned", version: 2, key: "\(Self.app):\(digest)", data: #"{"sealed":{"box":"x"}}"#, offset: 5),
                Self.record("SubscriptionRegistered", version: 2, key: "\(Self.app):\(digest)", offset: 6),
                Self.record("OperatorDefined", version: 1, key: "operator:ana", offset: 7),
            ]
            let events = try records.map {
                ProjectedEvent(topic: $0.topic, partition: $0.partition, offset: $0.offset, event: try #require(try projection.decode($0)))
            }
            try await client.withConnection { connection in try await projection.apply(events, on: connection, logger: logger) }

            var keys: [String] = []
            for try await key in try await client.query("SELECT aggregate_key FROM push.event_journal ORDER BY \"offset\"", logger: logger).decode(String.self)
            {
                keys.append(key)
            }
            let device = "\(Self.app):\(digest)"
            #expect(keys == [device, device, "erasure:e-1", device, device, device, device, "operator:ana"])
            #expect(try await client.query("SELECT 1 FROM push.event_journal WHERE aggregate_key LIKE \("%\(Self.token)%")", logger: logger).collect().isEmpty)
        }
    }
}
