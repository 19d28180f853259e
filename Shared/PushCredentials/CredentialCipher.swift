import Crypto
import Foundation
import PushRuntime
import PushStore

/// Seals provider secrets with AES-256-GCM under the current key of the credentials key ring
/// and opens them under whichever key sealed them, so the key can be rotated without downtime
/// (docs/operations.md, "Rotating the credentials key").
///
/// The current key is `PUSH_CREDENTIALS_KEY` (base64 of 32 bytes) or the file named by
/// `PUSH_CREDENTIALS_KEY_FILE`; earlier keys, still accepted for opening, are
/// `PUSH_CREDENTIALS_PREVIOUS_KEYS` (comma-separated) or the file named by
/// `PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE` (one per line). Every sealed row records the id of its
/// key (`CredentialKey.id`). The app id (or another context) is bound as authenticated data, so
/// a sealed secret cannot be moved to another app.
package struct CredentialCipher: Sendable {
    /// A sealed secret and the id of the key that sealed it (stored side by side).
    package struct Sealed: Sendable, Hashable {
        package var keyId: String
        package var ciphertext: Data
    }

    /// The key new secrets are sealed with.
    package let current: CredentialKey
    /// Keys only opened with, newest first.
    package let previous: [CredentialKey]

    package init(current: CredentialKey, previous: [CredentialKey] = []) {
        self.current = current
        self.previous = previous.filter { $0.id != current.id }
    }

    /// A ring of one key (`setting` names it in errors).
    package init(keyBase64: String, setting: String = "PUSH_CREDENTIALS_KEY") throws(ConfigurationError) {
        self.init(current: try CredentialKey(base64: keyBase64, setting: setting))
    }

    /// nil when no current key is set (credential routes then answer 503; senders refuse to start).
    package static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> CredentialCipher? {
        try ring(
            current: Setting("PUSH_CREDENTIALS_KEY", environment["PUSH_CREDENTIALS_KEY"]),
            currentFile: Setting("PUSH_CREDENTIALS_KEY_FILE", environment["PUSH_CREDENTIALS_KEY_FILE"]),
            previous: Setting("PUSH_CREDENTIALS_PREVIOUS_KEYS", environment["PUSH_CREDENTIALS_PREVIOUS_KEYS"]),
            previousFile: Setting("PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE", environment["PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE"]))
    }

    /// The data keys' key-encryption key ring (`PUSH_DATA_KEYS_KEY` or `PUSH_DATA_KEYS_KEY_FILE`,
    /// and `PUSH_DATA_KEYS_PREVIOUS_KEYS` or `PUSH_DATA_KEYS_PREVIOUS_KEYS_FILE`); nil when no
    /// current key is set (data keys are then stored as they are).
    package static func dataKeys(fromEnvironment environment: [String: String]) throws(ConfigurationError) -> CredentialCipher? {
        try ring(
            current: Setting("PUSH_DATA_KEYS_KEY", environment["PUSH_DATA_KEYS_KEY"]),
            currentFile: Setting("PUSH_DATA_KEYS_KEY_FILE", environment["PUSH_DATA_KEYS_KEY_FILE"]),
            previous: Setting("PUSH_DATA_KEYS_PREVIOUS_KEYS", environment["PUSH_DATA_KEYS_PREVIOUS_KEYS"]),
            previousFile: Setting("PUSH_DATA_KEYS_PREVIOUS_KEYS_FILE", environment["PUSH_DATA_KEYS_PREVIOUS_KEYS_FILE"]))
    }

    /// A setting's name (for errors) and its value.
    struct Setting {
        var name: String
        var value: String?
        init(_ name: String, _ value: String?) {
            self.name = name
            self.value = value.flatMap { $0.isEmpty ? nil : $0 }
        }
    }

    /// The ring of the current key (the file's, when both are set) and the previous keys (the
    /// file's one per line, or the list's comma-separated).
    static func ring(current: Setting, currentFile: Setting, previous: Setting, previousFile: Setting) throws(ConfigurationError) -> CredentialCipher? {
        let previousKeys = try previousKeys(list: previous, file: previousFile)
        let key: CredentialKey
        if let path = currentFile.value {
            key = try CredentialKey(base64: try read(path, setting: currentFile.name), setting: "\(currentFile.name) (\(path))")
        } else if let text = current.value {
            key = try CredentialKey(base64: text, setting: current.name)
        } else {
            guard previousKeys.isEmpty else {
                throw ConfigurationError("\(previous.name) is set without a current key: set \(current.name) or \(currentFile.name)")
            }
            return nil
        }
        return CredentialCipher(current: key, previous: previousKeys)
    }

    private static func previousKeys(list: Setting, file: Setting) throws(ConfigurationError) -> [CredentialKey] {
        var entries: [(text: Substring, setting: String)] = []
        if let path = file.value {
            let lines = try read(path, setting: file.name).split(whereSeparator: \.isNewline)
            entries = lines.enumerated().map { ($1, "line \($0 + 1) of \(file.name) (\(path))") }
        } else if let text = list.value {
            entries = text.split(separator: ",").enumerated().map { ($1, "entry \($0 + 1) of \(list.name)") }
        }
        var keys: [CredentialKey] = []
        for entry in entries where !entry.text.trimmingCharacters(in: .whitespaces).isEmpty {
            keys.append(try CredentialKey(base64: String(entry.text), setting: entry.setting))
        }
        return keys
    }

    private static func read(_ path: String, setting: String) throws(ConfigurationError) -> String {
        guard let contents = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError("\(setting) names a file that cannot be read: \(path)")
        }
        return String(decoding: contents, as: UTF8.self)
    }

    /// Every key id of the ring, current first.
    package var keyIds: [String] { [current.id] + previous.map(\.id) }

    package func seal(_ secret: Data, appId: UUID) throws -> Sealed {
        try seal(secret, context: appId.uuidString)
    }

    package func open(_ sealed: Data, keyId: String?, appId: UUID) throws(CredentialCipherError) -> Data {
        try open(sealed, keyId: keyId, context: appId.uuidString)
    }

    /// Seals a secret under the current key, bound to `context` (authenticated data): it opens
    /// only with the same one.
    package func seal(_ secret: Data, context: String) throws -> Sealed {
        guard let combined = try AES.GCM.seal(secret, using: current.key, authenticating: Data(context.utf8)).combined else {
            throw ConfigurationError("AES-GCM produced no combined box")
        }
        return Sealed(keyId: current.id, ciphertext: combined)
    }

    /// Opens what the key `keyId` sealed. A nil `keyId` is a row sealed before key ids were
    /// recorded (migration 13): every key of the ring is tried, current first.
    package func open(_ sealed: Data, keyId: String?, context: String) throws(CredentialCipherError) -> Data {
        let candidates: [CredentialKey]
        if let keyId {
            guard let key = ([current] + previous).first(where: { $0.id == keyId }) else {
                throw CredentialCipherError(code: .unknownKey, keyId: keyId)
            }
            candidates = [key]
        } else {
            candidates = [current] + previous
        }
        for candidate in candidates {
            if let box = try? AES.GCM.SealedBox(combined: sealed),
                let opened = try? AES.GCM.open(box, using: candidate.key, authenticating: Data(context.utf8))
            {
                return opened
            }
        }
        throw CredentialCipherError(code: .notOpened, keyId: keyId)
    }

    /// The authenticated data of an APNs provider token in `push.apns_provider_tokens`: here, not
    /// with the apns-sender's token store, because `pushctl credentials reseal` opens those too.
    package static func apnsProviderTokenContext(teamId: String, keyId: String, keyFingerprint: String) -> String {
        "apns-provider-token:\(teamId):\(keyId):\(keyFingerprint)"
    }
}

/// The data keys' key-encryption key ring (`CredentialCipher.dataKeys(fromEnvironment:)`): a data
/// key is sealed with AES-256-GCM under the current key, bound to its row's subject id.
extension CredentialCipher: DataKeyWrapping {
    static func dataKeyContext(_ subjectId: UUID) -> String { "push-data-key:\(subjectId.uuidString.lowercased())" }

    package func wrap(_ key: [UInt8], subjectId: UUID) throws -> (bytes: [UInt8], keyId: String) {
        let sealed = try seal(Data(key), context: Self.dataKeyContext(subjectId))
        return (Array(sealed.ciphertext), sealed.keyId)
    }

    package func unwrap(_ bytes: [UInt8], keyId: String, subjectId: UUID) throws -> [UInt8] {
        do {
            return Array(try open(Data(bytes), keyId: keyId, context: Self.dataKeyContext(subjectId)))
        } catch {
            throw DataKeyUnwrapError(subjectId: subjectId, keyId: keyId, configured: true)
        }
    }
}
