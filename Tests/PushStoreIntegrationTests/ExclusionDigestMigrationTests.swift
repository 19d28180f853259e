import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushSchema
import PushStore
import Testing

/// Migration 24 on a database whose `exclusion_log` already has rows (a deployment upgraded in
/// place): every row gains its token's digest, the primary key moves to the digest, the token
/// becomes optional, and the month partitions still work. Runs in a scratch database of the test
/// server, dropped at the end.
@Suite("Migration 24 keys exclusion_log by token digest, keeping its rows")
struct ExclusionDigestMigrationTests {
    @Test(
        "existing rows get push.token_digest of their token (equal to TokenDigest); the key is (delivery, app, digest, month); a row without a token is accepted; a month partition created afterwards takes the default partition's rows"
    )
    func backfillsDigests() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_migration24") { client, _ in
            let logger = StoreTestSupport.logger
            func strings(_ query: PostgresQuery) async throws -> [String] {
                var values: [String] = []
                for try await value in try await client.query(query, logger: logger).decode(String.self) { values.append(value) }
                return values
            }
            let before = SchemaMigrations.all.filter { $0.version < 24 }
            try await Migrator(client: client, logger: logger).migrate(before)
            let app = UUID()
            // x1 in a month with a partition, x2 in 1990 (the default partition).
            try await client.query(
                """
                SELECT push.create_log_partition('exclusion_log', '2025-04-10T00:00:00Z');
                """,
                logger: logger)
            try await client.query(
                """
                INSERT INTO push.exclusion_log (delivery_id, app_id, registration_token, platform, reason, excluded_at, log_month)
                VALUES ('d1', \(app), 'x1', 'ios', 'quarantined: Unregistered', '2025-04-10T00:00:00Z', '2025-04-01'),
                       ('d2', \(app), 'x2', 'android', 'unsubscribed', '1990-03-10T00:00:00Z', '1990-03-01')
                """,
                logger: logger)

            let applied = try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all)
            #expect(applied == SchemaMigrations.all.map(\.version).filter { $0 >= 24 }, "24 and the later ones")

            #expect(
                try await strings("SELECT registration_token || ' ' || token_digest FROM push.exclusion_log ORDER BY 1") == [
                    "x1 \(TokenDigest.of("x1"))", "x2 \(TokenDigest.of("x2"))",
                ])
            #expect(
                try await strings(
                    """
                    SELECT pg_get_constraintdef(k.oid) FROM pg_constraint k
                    WHERE k.contype = 'p' AND k.conrelid = 'push.exclusion_log'::regclass
                    """
                ) == ["PRIMARY KEY (delivery_id, app_id, token_digest, log_month)"])
            #expect(
                try await strings(
                    "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'push' AND tablename = 'exclusion_log' ORDER BY 1"
                ) == ["exclusion_log_device", "exclusion_log_pkey"])

            // What the projection writes from a version-2 event for a device no longer in
            // push.subscriptions: no token. The same device again is the same row.
            for _ in 0..<2 {
                try await client.query(
                    """
                    INSERT INTO push.exclusion_log (delivery_id, app_id, token_digest, registration_token, platform, reason, excluded_at, log_month)
                    VALUES ('d2', \(app), \(TokenDigest.of("x3")), NULL, 'android', 'unsubscribed', '1990-03-10T00:00:00Z', '1990-03-01')
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger)
            }
            #expect(try await strings("SELECT count(*)::text FROM push.exclusion_log WHERE delivery_id = 'd2'") == ["2"])
            // A digest is required.
            await #expect(throws: PSQLError.self) {
                try await client.query(
                    """
                    INSERT INTO push.exclusion_log (delivery_id, app_id, registration_token, platform, reason, excluded_at, log_month)
                    VALUES ('d3', \(app), 'x4', 'ios', 'unsubscribed', now(), '1990-03-01')
                    """,
                    logger: logger)
            }

            // The partition function still moves rows (with the new column) out of the default.
            #expect(try await strings("SELECT push.create_log_partition('exclusion_log', '1990-03-10T00:00:00Z')::text") == ["true"])
            #expect(
                try await strings(
                    """
                    SELECT c.relname || ':' || e.token_digest FROM push.exclusion_log e JOIN pg_class c ON c.oid = e.tableoid
                    WHERE e.delivery_id = 'd2' ORDER BY 1
                    """
                ) == ["exclusion_log_p199003:\(TokenDigest.of("x2"))", "exclusion_log_p199003:\(TokenDigest.of("x3"))"].sorted())
        }
    }
}
