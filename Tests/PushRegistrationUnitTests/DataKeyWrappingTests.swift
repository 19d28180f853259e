import Foundation
import PushCredentials
import PushRuntime
import PushStore
import Testing

/// The data keys' key-encryption key ring (`PUSH_DATA_KEYS_KEY`; docs/operations.md, "The data
/// keys' key-encryption key"): a wrapped key opens only for its own row, under the key that
/// wrapped it, and a row stored as it is stays readable.
@Suite("Data keys wrapped by the key-encryption key")
struct DataKeyWrappingTests {
    static func randomKey() -> String { Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString() }

    let keyA = Self.randomKey()
    let keyB = Self.randomKey()

    @Test("wrapped: 60 bytes, not the key; opened for its own row only; a ring with A previous opens what A wrapped")
    func wrapAndRotate() throws {
        let a = try #require(try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": keyA]))
        let key = SubjectKeys.freshKey()
        let subject = UUID()
        let (bytes, keyId) = try SubjectKeys.stored(key, subjectId: subject, wrapping: a)
        #expect(bytes.count == 60 && keyId == a.current.id)
        #expect(Data(bytes).range(of: Data(key)) == nil, "the key's bytes are not in the row")
        #expect(try SubjectKeys.opened(bytes, keyId: keyId, subjectId: subject, wrapping: a) == key)
        #expect(throws: DataKeyUnwrapError.self) { try SubjectKeys.opened(bytes, keyId: keyId, subjectId: UUID(), wrapping: a) }

        let rotated = try #require(try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": keyB, "PUSH_DATA_KEYS_PREVIOUS_KEYS": keyA]))
        #expect(try SubjectKeys.opened(bytes, keyId: keyId, subjectId: subject, wrapping: rotated) == key)
        let onlyB = try #require(try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": keyB]))
        let refused = #expect(throws: DataKeyUnwrapError.self) { try SubjectKeys.opened(bytes, keyId: keyId, subjectId: subject, wrapping: onlyB) }
        #expect(refused?.description.contains(keyId!) == true && refused?.description.contains("PUSH_DATA_KEYS_PREVIOUS_KEYS") == true)
    }

    @Test("without a ring: keys stored as they are; a wrapped row says which setting is missing; a row stored as it is opens everywhere")
    func withoutRing() throws {
        let key = SubjectKeys.freshKey()
        let subject = UUID()
        let stored = try SubjectKeys.stored(key, subjectId: subject, wrapping: nil)
        #expect(stored.bytes == key && stored.keyId == nil)
        let a = try #require(try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": keyA]))
        #expect(try SubjectKeys.opened(key, keyId: nil, subjectId: subject, wrapping: a) == key)
        let wrapped = try SubjectKeys.stored(key, subjectId: subject, wrapping: a)
        let missing = #expect(throws: DataKeyUnwrapError.self) {
            try SubjectKeys.opened(wrapped.bytes, keyId: wrapped.keyId, subjectId: subject, wrapping: nil)
        }
        #expect(missing?.description.contains("set PUSH_DATA_KEYS_KEY") == true)
        #expect(try CredentialCipher.dataKeys(fromEnvironment: [:]) == nil)
        #expect(throws: ConfigurationError.self) { try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_KEY": "short"]) }
        #expect(throws: ConfigurationError.self) { try CredentialCipher.dataKeys(fromEnvironment: ["PUSH_DATA_KEYS_PREVIOUS_KEYS": keyA]) }
    }
}
