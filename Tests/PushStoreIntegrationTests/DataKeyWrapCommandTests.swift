import Foundation
import PostgresNIO
import PushCredentials
import PushEvents
import PushSchema
import PushStore
import PushTestSupport
import Testing

/// `pushctl data-keys wrap` on a scratch database (docs/operations.md, "The data keys'
/// key-encryption key"): it wraps the keys stored as they are and re-wraps those of a previous
/// key, and touches nothing it cannot open.
@Suite("pushctl data-keys wrap")
struct DataKeyWrapCommandTests {
    static func randomKey() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    @Test("keys stored as they are get wrapped, a rotation re-wraps, a second run changes nothing, a ring that opens none exits 1 naming the key")
    func wrapCommand() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_datakeys") { client, database in
            let logger = StoreTestSupport.logger
            var environment = TestStack.environment
            var components = try #require(environment["POSTGRES_URL"].flatMap(URLComponents.init(string:)))
            components.path = "/\(database)"
            environment["POSTGRES_URL"] = try #require(components.string)
            environment["PUSH_DATA_KEYS_KEY_FILE"] = nil
            try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all)
            // Five keys of a deployment that ran without a key-encryption key.
            let (keyA, keyB, service) = (Self.randomKey(), Self.randomKey(), UUID())
            var raw: [UUID: [UInt8]] = [:]
            for index in 0..<5 {
                let (id, key) = (UUID(), SubjectKeys.freshKey())
                raw[id] = key
                try await client.query(
                    "INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key) VALUES (\(id), \(service), \("user:raw-\(index)"), \(ByteBuffer(bytes: key)))",
                    logger: logger)
            }
            func pushctl(_ settings: [String: String]) async throws -> (status: Int32, output: String) {
                try await BuiltExecutable.run(
                    "pushctl", arguments: ["data-keys", "wrap", "--batch-size", "2"], environment: environment.merging(settings) { _, new in new })
            }
            func stored() async throws -> [UUID: (bytes: [UInt8], keyId: String?)] {
                var rows: [UUID: (bytes: [UInt8], keyId: String?)] = [:]
                for try await (id, bytes, keyId) in try await client.query("SELECT subject_id, data_key, wrap_key_id FROM push.subject_keys", logger: logger)
                    .decode((UUID, ByteBuffer, String?).self)
                {
                    rows[id] = (Array(bytes.readableBytesView), keyId)
                }
                return rows
            }
            let a = try #require(try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": keyA]))
            let rotated = try #require(try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": keyB, "PUSH_DATA_KEYS_PREVIOUS_KEYS": keyA]))

            // Wrapped under A (in batches of two); the keys are the same once opened.
            let first = try await pushctl(["PUSH_DATA_KEYS_KEY": keyA])
            #expect(
                first.status == 0 && first.output.contains("current key-encryption key id \(a.current.id)") && first.output.contains("5 wrapped"),
                "\(first.output)")
            for (id, row) in try await stored() {
                #expect(row.keyId == a.current.id && row.bytes.count == 60)
                #expect(try SubjectKeys.opened(row.bytes, keyId: row.keyId, subjectId: id, wrapping: a) == raw[id])
            }
            // Rotated to B, A previous: re-wrapped under B; again: nothing to do.
            let second = try await pushctl(["PUSH_DATA_KEYS_KEY": keyB, "PUSH_DATA_KEYS_PREVIOUS_KEYS": keyA])
            #expect(second.status == 0 && second.output.contains("5 re-wrapped"), "\(second.output)")
            for (id, row) in try await stored() {
                #expect(row.keyId == rotated.current.id)
                #expect(try SubjectKeys.opened(row.bytes, keyId: row.keyId, subjectId: id, wrapping: rotated) == raw[id])
            }
            let third = try await pushctl(["PUSH_DATA_KEYS_KEY": keyB])
            #expect(
                third.status == 0 && third.output.contains("0 wrapped") && third.output.contains("0 re-wrapped") && third.output.contains("5 already"),
                "\(third.output)")
            // A ring that holds neither: rows named by their key id, exit 1, nothing changed.
            let before = try await stored()
            let refused = try await pushctl(["PUSH_DATA_KEYS_KEY": Self.randomKey()])
            #expect(refused.status != 0 && refused.output.contains("5 left as they were: wrapped under key \(rotated.current.id)"), "\(refused.output)")
            #expect(try await stored().mapValues(\.bytes) == before.mapValues(\.bytes))
            for key in raw.values { #expect(!refused.output.contains(TokenDigest.hex(key))) }
            let unset = try await pushctl([:])
            #expect(unset.status != 0 && unset.output.contains("PUSH_DATA_KEYS_KEY (or PUSH_DATA_KEYS_KEY_FILE) is not set"), "\(unset.output)")
        }
    }
}
