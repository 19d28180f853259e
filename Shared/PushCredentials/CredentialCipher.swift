import Crypto
import Foundation
import PushRuntime

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
        let previous = try previousKeys(environment)
        let current: CredentialKey
        if let path = environment["PUSH_CREDENTIALS_KEY_FILE"], !path.isEmpty {
            current = try CredentialKey(base64: try read(path, setting: "PUSH_CREDENTIALS_KEY_FILE"), setting: "PUSH_CREDENTIALS_KEY_FILE (\(path))")
        } else if let key = environment["PUSH_CREDENTIALS_KEY"], !key.isEmpty {
            current = try CredentialKey(base64: key, setting: "PUSH_CREDENTIALS_KEY")
        } else {
            guard previous.isEmpty else {
                throw ConfigurationError("PUSH_CREDENTIALS_PREVIOUS_KEYS is set without a current key: set PUSH_CREDENTIALS_KEY or PUSH_CREDENTIALS_KEY_FILE")
            }
            return nil
        }
        return CredentialCipher(current: current, previous: previous)
    }

    private static func previousKeys(_ environment: [String: String]) throws(ConfigurationError) -> [CredentialKey] {
        var entries: [(text: Substring, setting: String)] = []
        if let path = environment["PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE"], !path.isEmpty {
            let lines = try read(path, setting: "PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE").split(whereSeparator: \.isNewline)
            entries = lines.enumerated().map { ($1, "line \($0 + 1) of PUSH_CREDENTIALS_PREVIOUS_KEYS_FILE (\(path))") }
        } else if let list = environment["PUSH_CREDENTIALS_PREVIOUS_KEYS"] {
            entries = list.split(separator: ",").enumerated().map { ($1, "entry \($0 + 1) of PUSH_CREDENTIALS_PREVIOUS_KEYS") }
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
