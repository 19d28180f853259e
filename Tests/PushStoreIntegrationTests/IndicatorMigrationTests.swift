import Foundation
import Logging
import PostgresNIO
import PushSchema
import PushStore
import Testing

/// Migrations that rewrite existing rows, on a database that already has deliveries, results and
/// hits (a deployment upgraded in place): migration 6's counters start from what is there;
/// migration 27 counts recipient lists. Each runs in a scratch database of the test server,
/// dropped at the end.
@Suite("Migrations 6 and 27 on existing rows")
struct IndicatorMigrationTests {
    @Test("counters, to_deliver and tracking_firsts equal the rows of deliveries, broad_log and tracking_log before the migration")
    func backfill() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_migration6") { client, _ in
            let logger = StoreTestSupport.logger
            #expect(try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all.filter { $0.version <= 5 }) == [1, 2, 3, 4, 5])

            try await client.query(
                """
                INSERT INTO push.deliveries (delivery_id, request_id, service_id, service_name, status, apps, audience, content,
                                             targeted, excluded, failed_at_planning, valid_until, send_at, accepted_at, planned_at)
                VALUES ('d1', 'r1', gen_random_uuid(), 's', 'planned', '[]', '{}', '{}', 4, 1, 0, now(), now(), now(), now()),
                       ('d2', 'r2', gen_random_uuid(), 's', 'planning', '[]', '{}', '{}', NULL, NULL, NULL, now(), now(), now(), NULL)
                """,
                logger: logger
            )
            try await client.query(
                """
                INSERT INTO push.broad_log (message_id, delivery_id, app_id, registration_token, platform, status, failure_type, attempts, created_at, updated_at, sent_at)
                VALUES ('00000000-0000-0000-0000-000000000001', 'd1', gen_random_uuid(), 't1', 'ios', 'sent', NULL, 1, now(), now(), now()),
                       ('00000000-0000-0000-0000-000000000002', 'd1', gen_random_uuid(), 't2', 'ios', 'failed', 'hard', 1, now(), now(), NULL),
                       ('00000000-0000-0000-0000-000000000003', 'd1', gen_random_uuid(), 't3', 'android', 'expired', NULL, 2, now(), now(), NULL),
                       ('00000000-0000-0000-0000-000000000004', 'd1', gen_random_uuid(), 't4', 'android', 'pending', NULL, 0, now(), now(), NULL),
                       ('00000000-0000-0000-0000-000000000005', 'd2', gen_random_uuid(), 't5', 'ios', 'sent', NULL, 1, now(), now(), now())
                """,
                logger: logger
            )
            try await client.query(
                """
                INSERT INTO push.tracking_log (tracking_id, message_id, message_id_form, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset)
                VALUES (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'uuid', 'd1', 1, 'received', now(), 0, 1),
                       (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'uuid', 'd1', 1, 'received', now(), 0, 2),
                       (gen_random_uuid(), '00000000-0000-0000-0000-000000000001', 'uuid', 'd1', 2, 'opened', now(), 0, 3),
                       (gen_random_uuid(), '00000000-0000-0000-0000-000000000002', 'uuid', 'd1', 3, 'other', now(), 0, 4),
                       (gen_random_uuid(), '-673096100', 'decimal', 'd2', 1, 'received', now(), 0, 5)
                """,
                logger: logger
            )

            // Migration 6 runs first (later ones follow; they do not touch these tables).
            #expect(try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all).first == 6)
            let rows = try await client.query(
                """
                SELECT delivery_id, coalesce(to_deliver, -1)::int, coalesce(excluded, -1)::int, processed::int, sent::int, failed::int,
                       failed_hard::int, expired::int, impressions::int, opens::int, coalesce(open_rate::float8, -1)
                FROM push.delivery_indicators ORDER BY delivery_id
                """,
                logger: logger
            )
            var seen: [String] = []
            for try await r in rows.decode((String, Int, Int, Int, Int, Int, Int, Int, Int, Int, Double).self) {
                seen.append("\(r.0): \(r.1) \(r.2) \(r.3) \(r.4) \(r.5) \(r.6) \(r.7) \(r.8) \(r.9) \(r.10)")
            }
            // delivery: to_deliver excluded processed sent failed hard expired impressions opens open_rate
            #expect(seen == ["d1: 4 1 3 1 1 1 1 1 1 1.0", "d2: -1 -1 1 1 0 0 0 1 0 0.0"])
            let firsts = try await client.query("SELECT count(*)::int FROM push.tracking_firsts", logger: logger)
            for try await count in firsts.decode(Int.self) { #expect(count == 3, "d1 received and opened, d2 received; not the tag 3") }
        }
    }

    @Test(
        "migration 27 counts the user keys of push.deliveries' audiences and of planned plans' audiences and proofs; a plan not planned yet keeps its lists"
    )
    func recipientsCounted() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_migration27") { client, _ in
            let logger = StoreTestSupport.logger
            _ = try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all.filter { $0.version <= 26 })
            try await client.query(
                """
                INSERT INTO push.deliveries (delivery_id, request_id, service_id, service_name, status, apps, audience, content, valid_until, send_at, accepted_at)
                VALUES ('d1', 'r1', gen_random_uuid(), 's', 'planned', '[]', '{"userKeys": ["ann@example.com", "bob"]}', '{}', now(), now(), now()),
                       ('d2', 'r2', gen_random_uuid(), 's', 'planned', '[]', '{"all": true}', '{}', now(), now(), now())
                """,
                logger: logger)
            try await client.query(
                """
                INSERT INTO push.delivery_plans (delivery_id, request_id, accepted, status, send_at)
                VALUES ('d1', 'r1', '{"deliveryId": "d1", "audience": {"userKeys": ["ann@example.com", "bob"]}, "proof": {"registrationTokens": ["t1"]}}', 'planned', now()),
                       ('d3', 'r3', '{"deliveryId": "d3", "audience": {"userKeys": ["ann@example.com"]}}', 'accepted', now())
                """,
                logger: logger)
            #expect(try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all).contains(27))
            var seen: [String] = []
            for try await row in try await client.query(
                """
                SELECT 'deliveries ' || delivery_id || ' ' || audience::text FROM push.deliveries
                UNION ALL SELECT 'plans ' || delivery_id || ' ' || (accepted - 'deliveryId')::text FROM push.delivery_plans
                """,
                logger: logger
            ).decode(String.self) {
                seen.append(row)
            }
            #expect(
                seen.sorted() == [
                    #"deliveries d1 {"userKeyCount": 2}"#, #"deliveries d2 {"all": true}"#,
                    #"plans d1 {"proof": {"registrationTokenCount": 1}, "audience": {"userKeyCount": 2}}"#,
                    #"plans d3 {"audience": {"userKeys": ["ann@example.com"]}}"#,
                ])
        }
    }
}
