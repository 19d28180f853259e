import Foundation
import PostgresNIO
import PushCredentials
import PushRegistration
import PushStore
import PushTestSupport
import Testing

/// The data keys wrapped by the key-encryption key, through the real registration service and
/// PostgreSQL (docs/operations.md, "The data keys' key-encryption key"): what a registration
/// stores opens nothing without the key-encryption key (`pushctl data-keys wrap`:
/// DataKeyWrapCommandTests).
@Suite("Data keys wrapped by a key-encryption key outside the database", .serialized)
struct DataKeyWrapTests {
    static func randomKey() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    /// The row of `subject` in the service: its stored bytes and key-encryption key id.
    static func row(_ h: RegistrationHarness, _ subject: String) async throws -> (id: UUID, bytes: [UInt8], keyId: String?)? {
        let rows = try await h.postgres.query("SELECT subject_id, data_key, wrap_key_id FROM push.subject_keys WHERE subject = \(subject)", logger: h.logger)
        for try await (id, bytes, keyId) in rows.decode((UUID, ByteBuffer, String?).self) { return (id, Array(bytes.readableBytesView), keyId) }
        return nil
    }

    @Test("a registration's key is stored wrapped (60 bytes, the current key's id), opens with the ring only; its subscription is projected")
    func registrationsStoreWrappedKeys() async throws {
        let ring = try #require(try CredentialCipher.dataKeys(fromEnvironment: TestStack.environment), "the stack's PUSH_DATA_KEYS_KEY_FILE")
        try await RegistrationHarness.run { h in
            let app = try await h.defineApp(platform: .ios)
            let user = "wrapped-\(h.suffix)"
            let token = RegistrationEndpointTests.hexToken()
            #expect(
                try await h.post("/nms/mobile/1/registerIOS.jssp", body: DeviceAdminTests.body(key: app.integrationKey, token: token, userKey: user)).status
                    == 200)
            try await eventually("projected") { try await h.subscription(appId: app.appId, token: token) != nil }
            let row = try #require(try await Self.row(h, "user:\(user)"))
            #expect(row.bytes.count == 60 && row.keyId == ring.current.id, "\(row.bytes.count) \(String(describing: row.keyId))")
            let key = try SubjectKeys.opened(row.bytes, keyId: row.keyId, subjectId: row.id, wrapping: ring)
            #expect(key.count == 32 && Data(row.bytes).range(of: Data(key)) == nil, "the row does not hold the key")
            #expect(throws: DataKeyUnwrapError.self) { try SubjectKeys.opened(row.bytes, keyId: row.keyId, subjectId: row.id, wrapping: nil) }
        }
    }
}
