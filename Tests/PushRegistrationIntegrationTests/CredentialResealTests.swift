import Foundation
import Logging
import PostgresNIO
import PushCredentials
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import Testing

/// Key rotation as an operator runs it (docs/operations.md, "Rotating the credentials key"):
/// credentials sealed under key A, services moved to B with A as previous, the real `pushctl
/// credentials reseal`, then a ring of B alone. `reseal` acts on every row of the database, so
/// the test runs in a scratch database of its own.
@Suite("pushctl credentials reseal: rotating the credentials key", .serialized)
struct CredentialResealTests {
    static func randomKey() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    static func count(_ postgres: PostgresClient, _ query: PostgresQuery) async throws -> Int {
        for try await value in try await postgres.query(query).decode(Int.self) { return value }
        return 0
    }

    /// The sealed bytes and key id of every row of both tables, to compare before and after.
    static func sealedRows(_ postgres: PostgresClient) async throws -> [String: String] {
        var rows: [String: String] = [:]
        let credentials = try await postgres.query(
            "SELECT credential_id::text, coalesce(sealing_key_id, ''), encode(ciphertext, 'hex') FROM push.app_credentials")
        for try await (id, keyId, sealed) in credentials.decode((String, String, String).self) { rows[id] = keyId + ":" + sealed }
        let tokens = try await postgres.query("SELECT key_id, coalesce(sealing_key_id, ''), encode(sealed_token, 'hex') FROM push.apns_provider_tokens")
        for try await (id, keyId, sealed) in tokens.decode((String, String, String).self) { rows["token:" + id] = keyId + ":" + sealed }
        return rows
    }

    @Test("A sealed, B+A read, reseal moves every row to B, B alone reads all, a second reseal changes nothing")
    func rotateWithoutDowntime() async throws {
        try TestStack.require()
        let suffix = UUID().uuidString.prefix(8).lowercased()
        let keyA = Self.randomKey()
        let keyB = Self.randomKey()
        let onlyA = try CredentialCipher(keyBase64: keyA)
        let onlyB = try CredentialCipher(keyBase64: keyB)
        let rotated = try #require(try CredentialCipher.fromEnvironment(["PUSH_CREDENTIALS_KEY": keyB, "PUSH_CREDENTIALS_PREVIOUS_KEYS": keyA]))
        var logger = Logger(label: "reseal-tests")
        logger.logLevel = .error

        let configuration = try RuntimeConfiguration(service: "reseal-tests", defaultOpsPort: 0)
        let database = try ScratchDatabase.create(prefix: "push_test_reseal")
        defer { database.drop() }
        var settings = configuration.postgres
        settings.database = database.name
        let postgres = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: logger)
        var environment = TestStack.environment
        environment["POSTGRES_URL"] = database.url
        environment["PUSH_CREDENTIALS_KEY"] = keyB
        environment["PUSH_CREDENTIALS_PREVIOUS_KEYS"] = keyA
        environment.removeValue(forKey: "PUSH_CREDENTIALS_KEY_FILE")
        environment.removeValue(forKey: "PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE")

        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            defer { tasks.cancelAll() }
            try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)

            // Four apps with credentials sealed under A (one as a row from before migration 13,
            // without a key id), and an APNs provider token sealed under A.
            let storeA = CredentialStore(postgres: postgres, cipher: onlyA, logger: logger)
            var secrets: [UUID: ProviderSecret] = [:]
            for index in 0..<4 {
                let appId = UUID()
                let credentialId = UUID()
                let secret = ProviderSecret.fcmServiceAccount(json: #"{"private_key": "secret-\#(index)-\#(suffix)"}"#)
                try await storeA.store(secret, fingerprint: "sha256:\(index)", details: [:], appId: appId, credentialId: credentialId)
                try await Self.activate(postgres, appId: appId, credentialId: credentialId, index: index, suffix: suffix)
                secrets[appId] = secret
            }
            let legacy = try #require(secrets.keys.first)
            try await postgres.query("UPDATE push.app_credentials SET sealing_key_id = NULL WHERE app_id = \(legacy)")
            let tokenContext = CredentialCipher.apnsProviderTokenContext(teamId: "TEAM123456", keyId: "ABC123DEFG", keyFingerprint: "fp")
            let token = try onlyA.seal(Data("jwt-\(suffix)".utf8), context: tokenContext)
            try await postgres.query(
                """
                INSERT INTO push.apns_provider_tokens (team_id, key_id, key_fingerprint, sealed_token, sealing_key_id, issued_at, updated_at)
                VALUES ('TEAM123456', 'ABC123DEFG', 'fp', \(ByteBuffer(data: token.ciphertext)), \(token.keyId), now(), now())
                """)

            // Services deployed with B current and A previous: they read every row, and what
            // they store from now on is sealed under B.
            let storeBA = CredentialStore(postgres: postgres, cipher: rotated, logger: logger)
            for (appId, secret) in secrets {
                #expect(try await storeBA.active(appId: appId) == secret)
            }
            let newApp = UUID()
            let newCredential = UUID()
            let newSecret = ProviderSecret.fcmServiceAccount(json: #"{"private_key": "new-\#(suffix)"}"#)
            try await storeBA.store(newSecret, fingerprint: "sha256:new", details: [:], appId: newApp, credentialId: newCredential)
            try await Self.activate(postgres, appId: newApp, credentialId: newCredential, index: 4, suffix: suffix)
            secrets[newApp] = newSecret
            #expect(try await Self.count(postgres, "SELECT count(*)::int FROM push.app_credentials WHERE sealing_key_id = \(onlyB.current.id)") == 1)

            // B alone cannot read A's rows yet, and says which key is missing.
            let storeB = CredentialStore(postgres: postgres, cipher: onlyB, logger: logger)
            let notYet = try #require(secrets.keys.first { $0 != legacy && $0 != newApp })
            let error = await #expect(throws: CredentialCipherError.self) { try await storeB.active(appId: notYet) }
            #expect(error?.code == .unknownKey && error?.keyId == onlyA.current.id)

            // The real pushctl, two rows per transaction.
            let reseal = try await BuiltExecutable.run("pushctl", arguments: ["credentials", "reseal", "--batch-size", "2"], environment: environment)
            #expect(reseal.status == 0, "\(reseal.output)")
            #expect(reseal.output.contains("current credentials key id \(onlyB.current.id); previous key ids: \(onlyA.current.id)"), "\(reseal.output)")
            #expect(reseal.output.contains("push.app_credentials: 4 resealed, 1 already under the current key"), "\(reseal.output)")
            #expect(reseal.output.contains("push.apns_provider_tokens: 1 resealed, 0 already under the current key"), "\(reseal.output)")
            #expect(!reseal.output.contains(keyA) && !reseal.output.contains(keyB), "keys never printed")

            // Every row under B: a ring of B alone reads everything.
            #expect(
                try await Self.count(postgres, "SELECT count(*)::int FROM push.app_credentials WHERE sealing_key_id IS DISTINCT FROM \(onlyB.current.id)") == 0)
            for (appId, secret) in secrets {
                #expect(try await storeB.active(appId: appId) == secret)
            }
            let tokens = try await postgres.query("SELECT sealed_token, sealing_key_id FROM push.apns_provider_tokens WHERE key_id = 'ABC123DEFG'")
            for try await (sealed, keyId) in tokens.decode((ByteBuffer, String?).self) {
                #expect(keyId == onlyB.current.id)
                #expect(try onlyB.open(Data(buffer: sealed), keyId: keyId, context: tokenContext) == Data("jwt-\(suffix)".utf8))
            }

            // Idempotent: a second run selects nothing and changes no byte.
            let before = try await Self.sealedRows(postgres)
            let again = try await BuiltExecutable.run("pushctl", arguments: ["credentials", "reseal"], environment: environment)
            #expect(again.status == 0, "\(again.output)")
            #expect(again.output.contains("push.app_credentials: 0 resealed, 5 already under the current key"), "\(again.output)")
            #expect(again.output.contains("push.apns_provider_tokens: 0 resealed, 1 already under the current key"), "\(again.output)")
            #expect(try await Self.sealedRows(postgres) == before)

            // A row under a key nobody configured (a lost key): reseal reseals nothing of it,
            // names its key id, and fails; the rest stays readable.
            let lost = try CredentialCipher(keyBase64: Self.randomKey())
            let lostApp = UUID()
            try await CredentialStore(postgres: postgres, cipher: lost, logger: logger).store(
                newSecret, fingerprint: "sha256:lost", details: [:], appId: lostApp, credentialId: UUID())
            let stuck = try await BuiltExecutable.run("pushctl", arguments: ["credentials", "reseal"], environment: environment)
            #expect(stuck.status != 0, "\(stuck.output)")
            #expect(
                stuck.output.contains(
                    "push.app_credentials: 1 left as they were: sealed under credentials key id \(lost.current.id), which is not configured"),
                "\(stuck.output)")
            #expect(try await Self.sealedRows(postgres).filter { before[$0.key] != nil } == before)
        }
    }

    /// Makes the credential the app's active one, as the catalog projection does from
    /// `AppCredentialsSet` (the senders read it through `push.apps.credential_id`).
    static func activate(_ postgres: PostgresClient, appId: UUID, credentialId: UUID, index: Int, suffix: String) async throws {
        try await postgres.query(
            """
            INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, created_at, updated_at, credential_id, credential_kind)
            VALUES (\(appId), \(UUID()), \("reseal-\(suffix)-\(index)"), 'android', 'production', 'x', now(), now(), \(credentialId), 'fcm-service-account')
            """)
    }
}
