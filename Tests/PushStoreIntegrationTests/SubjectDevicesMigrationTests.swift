import Foundation
import PostgresNIO
import PushEvents
import PushSchema
import PushStore
import Testing

/// Migration 33 on a database that already has subscriptions and data keys (a deployment
/// upgraded in place): every subscription's device is recorded under its subject's key, the
/// person's for a user key, the device's own without one. Runs in a scratch database.
@Suite("Migration 33 records the devices of each subject from the subscriptions")
struct SubjectDevicesMigrationTests {
    @Test("a person's two devices under the person's subject, an anonymous device under its own; a device without a key is left out")
    func backfillsSubjectDevices() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_migration33") { client, _ in
            let logger = StoreTestSupport.logger
            try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all.filter { $0.version < 33 })
            let (service, app) = (UUID(), UUID())
            let (person, anonymous) = (UUID(), UUID())
            try await client.query(
                "INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES (\(service), 'svc', 'Svc', now(), now())", logger: logger)
            try await client.query(
                """
                INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id, created_at, updated_at)
                VALUES (\(app), \(service), 'key-33', 'ios', 'production', 'App', 'com.example', now(), now())
                """, logger: logger)
            for (token, user) in [("t-phone", "alice"), ("t-tablet", "alice"), ("t-anon", ""), ("t-nokey", "bob")] {
                try await client.query(
                    """
                    INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, registered_at, updated_at)
                    VALUES (\(app), \(token), 'ios', \(user), now(), now())
                    """, logger: logger)
            }
            let key = [UInt8](repeating: 7, count: 32)
            try await client.query(
                """
                INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key)
                VALUES (\(person), \(service), 'user:alice', \(ByteBuffer(bytes: key))),
                       (\(anonymous), \(service), \(SubjectKeys.subject(userKey: "", appId: app, tokenDigest: TokenDigest.of("t-anon"))), \(ByteBuffer(bytes: key)))
                """, logger: logger)

            #expect(try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all).first == 33, "33 and the versions after it")

            var recorded: [String] = []
            for try await (subject, digest) in try await client.query(
                "SELECT subject_id::text, token_digest FROM push.subject_devices WHERE app_id = \(app) ORDER BY 1, 2", logger: logger
            ).decode((String, String).self) {
                recorded.append("\(subject) \(digest)")
            }
            let expected = [
                "\(person.uuidString.lowercased()) \(TokenDigest.of("t-phone"))", "\(person.uuidString.lowercased()) \(TokenDigest.of("t-tablet"))",
                "\(anonymous.uuidString.lowercased()) \(TokenDigest.of("t-anon"))",
            ]
            #expect(recorded == expected.sorted())
        }
    }
}
