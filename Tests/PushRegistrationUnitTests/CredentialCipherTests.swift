import Foundation
import PushCredentials
import PushRuntime
import Testing

@Suite("The credentials key ring: seal under the current key, open under the key a row names")
struct CredentialCipherTests {
    static func randomKey() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    let keyA = Self.randomKey()
    let keyB = Self.randomKey()
    let appId = UUID()

    @Test("a key's id is 16 hex digits, the same for the same key, different for another")
    func keyIds() throws {
        let a = try CredentialKey(base64: keyA, setting: "test")
        #expect(a.id.count == 16 && a.id.allSatisfy(\.isHexDigit))
        #expect(try CredentialKey(base64: keyA + "\n", setting: "test").id == a.id)
        #expect(try CredentialKey(base64: keyB, setting: "test").id != a.id)
    }

    @Test("sealed under A, opened by a ring with B current and A previous; new seals name B")
    func rotation() throws {
        let a = try CredentialCipher(keyBase64: keyA)
        let ring = try CredentialCipher.fromEnvironment(["PUSH_CREDENTIALS_KEY": keyB, "PUSH_CREDENTIALS_PREVIOUS_KEYS": keyA])
        let rotated = try #require(ring)
        let sealed = try a.seal(Data("secret".utf8), appId: appId)
        #expect(sealed.keyId == a.current.id)
        #expect(try rotated.open(sealed.ciphertext, keyId: sealed.keyId, appId: appId) == Data("secret".utf8))
        let resealed = try rotated.seal(Data("secret".utf8), appId: appId)
        #expect(resealed.keyId == rotated.current.id && resealed.keyId != a.current.id)
        #expect(rotated.keyIds == [rotated.current.id, a.current.id])
    }

    @Test("a row under a key the ring does not hold: the error names the key id, never a key")
    func unknownKey() throws {
        let sealed = try CredentialCipher(keyBase64: keyA).seal(Data("secret".utf8), appId: appId)
        let onlyB = try CredentialCipher(keyBase64: keyB)
        let error = #expect(throws: CredentialCipherError.self) { try onlyB.open(sealed.ciphertext, keyId: sealed.keyId, appId: appId) }
        #expect(error?.code == .unknownKey)
        #expect(error?.keyId == sealed.keyId)
        let text = try #require(error?.description)
        #expect(text.contains(sealed.keyId) && text.contains("PUSH_CREDENTIALS_PREVIOUS_KEYS"))
        #expect(!text.contains(keyA) && !text.contains(keyB))
    }

    @Test("a row sealed before key ids (no id) opens under any key of the ring; under none it fails")
    func rowsWithoutKeyId() throws {
        let sealed = try CredentialCipher(keyBase64: keyA).seal(Data("legacy".utf8), appId: appId)
        let ring = CredentialCipher(current: try CredentialKey(base64: keyB, setting: "b"), previous: [try CredentialKey(base64: keyA, setting: "a")])
        #expect(try ring.open(sealed.ciphertext, keyId: nil, appId: appId) == Data("legacy".utf8))
        let error = #expect(throws: CredentialCipherError.self) { try CredentialCipher(keyBase64: keyB).open(sealed.ciphertext, keyId: nil, appId: appId) }
        #expect(error?.code == .notOpened)
    }

    @Test("bound to its app: another app's id does not open it")
    func boundToApp() throws {
        let cipher = try CredentialCipher(keyBase64: keyA)
        let sealed = try cipher.seal(Data("secret".utf8), appId: appId)
        let error = #expect(throws: CredentialCipherError.self) { try cipher.open(sealed.ciphertext, keyId: sealed.keyId, appId: UUID()) }
        #expect(error?.code == .notOpened)
    }

    @Test("settings: previous keys from a list or a file; a bad entry is named by position, not echoed")
    func settings() throws {
        #expect(try CredentialCipher.fromEnvironment([:]) == nil)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("previous-keys-\(UUID())")
        defer { try? FileManager.default.removeItem(at: file) }
        let keyC = Self.randomKey()
        try "\(keyA)\n\n\(keyC)\n".write(to: file, atomically: true, encoding: .utf8)
        let fromFile = try #require(
            try CredentialCipher.fromEnvironment(["PUSH_CREDENTIALS_KEY": keyB, "PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE": file.path]))
        #expect(fromFile.previous.map(\.id) == [try CredentialKey(base64: keyA, setting: "a").id, try CredentialKey(base64: keyC, setting: "c").id])

        let bad = #expect(throws: ConfigurationError.self) {
            try CredentialCipher.fromEnvironment(["PUSH_CREDENTIALS_KEY": keyB, "PUSH_CREDENTIALS_PREVIOUS_KEYS": "\(keyA),not-a-key-secret"])
        }
        #expect(bad?.message.contains("entry 2 of PUSH_CREDENTIALS_PREVIOUS_KEYS") == true)
        #expect(bad?.message.contains("not-a-key-secret") == false)

        let orphan = #expect(throws: ConfigurationError.self) { try CredentialCipher.fromEnvironment(["PUSH_CREDENTIALS_PREVIOUS_KEYS": keyA]) }
        #expect(orphan?.message.contains("without a current key") == true)
    }
}
