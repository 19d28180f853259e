import Foundation
import Logging
import PostgresNIO
import PushSchema
import PushStore
import Testing

/// Migration 18 on a database that already has broad_log, exclusion_log and tracking_log rows
/// (a deployment upgraded in place): every row is kept, in its month's partition, with the
/// indexes and the documented keys. Runs in a scratch database of the test server, dropped at
/// the end.
@Suite("Migration 18 partitions the logs, keeping their rows")
struct LogPartitionMigrationTests {
    @Test("rows of three months (one without a delivery row) are kept in their partitions; keys, indexes and upserts work on the partitioned tables")
    func convertsExistingRows() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_migration18") { client, _ in
            let logger = StoreTestSupport.logger
            func strings(_ query: PostgresQuery) async throws -> [String] {
                var values: [String] = []
                for try await value in try await client.query(query, logger: logger).decode(String.self) { values.append(value) }
                return values
            }
            try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all.filter { $0.version <= 15 })
            // d1 accepted before and sent from March 2025 (its messages planned in April: the
            // delivery's month wins), d2 with no delivery row (its first message's month),
            // hits in two months.
            try await client.query(
                """
                INSERT INTO push.deliveries (delivery_id, request_id, service_id, service_name, status, apps, audience, content,
                                             targeted, excluded, failed_at_planning, valid_until, send_at, accepted_at, planned_at)
                VALUES ('d1', 'r1', gen_random_uuid(), 's', 'planned', '[]', '{}', '{}', 2, 1, 0, now(), '2025-03-31T23:00:00Z', '2025-02-27T10:00:00Z', now())
                """,
                logger: logger)
            try await client.query(
                """
                INSERT INTO push.broad_log (message_id, broad_log_id, delivery_id, app_id, registration_token, platform, status, attempts, created_at, updated_at)
                VALUES ('00000000-0000-0000-0000-000000000001', 1, 'd1', gen_random_uuid(), 't1', 'ios', 'sent', 1, '2025-04-01T00:10:00Z', now()),
                       ('00000000-0000-0000-0000-000000000002', 2, 'd1', gen_random_uuid(), 't2', 'ios', 'pending', 0, '2025-04-01T00:10:00Z', now()),
                       ('00000000-0000-0000-0000-000000000003', 3, 'd2', gen_random_uuid(), 't3', 'android', 'sent', 1, '2025-06-30T10:00:00Z', now()),
                       ('00000000-0000-0000-0000-000000000004', 4, 'd2', gen_random_uuid(), 't4', 'android', 'sent', 1, '2025-07-01T10:00:00Z', now())
                """,
                logger: logger)
            try await client.query(
                """
                INSERT INTO push.exclusion_log (delivery_id, app_id, registration_token, platform, reason, excluded_at)
                VALUES ('d1', gen_random_uuid(), 'x1', 'ios', 'quarantined: Unregistered', '2025-04-01T00:10:00Z')
                """,
                logger: logger)
            try await client.query(
                """
                INSERT INTO push.tracking_log (tracking_id, message_id, message_id_form, broad_log_id, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset)
                VALUES ('10000000-0000-0000-0000-000000000001', '1', 'decimal', 1, 'd1', 1, 'received', '2025-04-01T08:00:00Z', 0, 1),
                       ('10000000-0000-0000-0000-000000000002', '3', 'decimal', 3, 'd2', 2, 'opened', '2025-07-02T08:00:00Z', 0, 2)
                """,
                logger: logger)

            // Up to 18 only: later migrations change these tables again (24: exclusion_log's key).
            let throughPartitions = SchemaMigrations.all.filter { $0.version <= 18 }
            #expect(try await Migrator(client: client, logger: logger).migrate(throughPartitions).contains(18))

            let placed = try await strings(
                """
                SELECT c.relname || ':' || b.message_id::text FROM push.broad_log b JOIN pg_class c ON c.oid = b.tableoid
                UNION ALL SELECT c.relname || ':' || e.registration_token FROM push.exclusion_log e JOIN pg_class c ON c.oid = e.tableoid
                UNION ALL SELECT c.relname || ':' || t.tracking_id::text FROM push.tracking_log t JOIN pg_class c ON c.oid = t.tableoid
                ORDER BY 1
                """)
            #expect(
                placed == [
                    "broad_log_p202503:00000000-0000-0000-0000-000000000001", "broad_log_p202503:00000000-0000-0000-0000-000000000002",
                    "broad_log_p202506:00000000-0000-0000-0000-000000000003", "broad_log_p202506:00000000-0000-0000-0000-000000000004",
                    "exclusion_log_p202503:x1",
                    "tracking_log_p202504:10000000-0000-0000-0000-000000000001", "tracking_log_p202507:10000000-0000-0000-0000-000000000002",
                ])
            #expect(
                try await strings("SELECT delivery_id || ':' || log_month::text FROM push.broad_log_deliveries ORDER BY 1") == [
                    "d1:2025-03-01", "d2:2025-06-01",
                ])
            // This month's and the next two months' partitions exist, besides the defaults.
            let listed = try await client.withConnection { try await LogPartitions(logger: logger).list(on: $0) }
            for table in ["broad_log", "exclusion_log", "tracking_log"] {
                #expect(listed.contains { $0.name == "\(table)_default" && $0.isDefault })
                for ahead in 0...2 {
                    let month = LogPartitions.utc.date(byAdding: .month, value: ahead, to: Date())!
                    #expect(listed.contains { $0.name == LogPartitions.name(table: table, month: month) })
                }
            }
            // The parents' indexes, with the partition key in the primary keys.
            let indexes = try await strings(
                "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'push' AND tablename IN ('broad_log', 'exclusion_log', 'tracking_log') ORDER BY 1"
            )
            #expect(
                indexes == [
                    "broad_log_broad_log_id", "broad_log_delivery_status", "broad_log_device", "broad_log_pkey", "exclusion_log_pkey",
                    "tracking_log_broad_log_id", "tracking_log_delivery_kind_message", "tracking_log_message", "tracking_log_pkey",
                ])
            #expect(
                try await strings(
                    """
                    SELECT c.relname || ' ' || pg_get_constraintdef(k.oid) FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid
                    WHERE k.contype = 'p' AND k.conrelid IN ('push.broad_log'::regclass, 'push.exclusion_log'::regclass, 'push.tracking_log'::regclass)
                    ORDER BY 1
                    """
                ) == [
                    "broad_log PRIMARY KEY (message_id, log_month)",
                    "exclusion_log PRIMARY KEY (delivery_id, app_id, registration_token, log_month)",
                    "tracking_log PRIMARY KEY (tracking_id, occurred_at)",
                ])
            // The CHECK constraints came along: a status the table never allowed is refused.
            await #expect(throws: PSQLError.self) {
                try await client.query("UPDATE push.broad_log SET status = 'lost' WHERE delivery_id = 'd1'", logger: logger)
            }
            // The projections' conflict target finds a migrated row.
            try await client.query(
                """
                INSERT INTO push.broad_log (message_id, delivery_id, app_id, registration_token, platform, status, attempts, created_at, updated_at, log_month)
                VALUES ('00000000-0000-0000-0000-000000000002', 'd1', gen_random_uuid(), 't2', 'ios', 'sent', 1, now(), now(), '2025-03-01')
                ON CONFLICT (message_id, log_month) DO UPDATE SET status = excluded.status WHERE push.broad_log.status = 'pending'
                """,
                logger: logger)
            #expect(try await strings("SELECT status FROM push.broad_log WHERE delivery_id = 'd1' ORDER BY message_id") == ["sent", "sent"])
            #expect(try await strings("SELECT count(*)::text FROM push.broad_log") == ["4"])
        }
    }
}
