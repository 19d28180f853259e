import Crypto
import Foundation
import PushRuntime

/// Seals provider secrets with AES-256-GCM under the key in `PUSH_CREDENTIALS_KEY` (base64 of
/// 32 bytes) or the file named by `PUSH_CREDENTIALS_KEY_FILE`. The app id is bound as
/// authenticated data, so a sealed secret cannot be moved to another app.
package struct CredentialCipher: Sendable {
    private let key: SymmetricKey

    package init(keyBase64: String) throws(ConfigurationError) {
        guard let bytes = Data(base64Encoded: keyBase64.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else {
            throw ConfigurationError("PUSH_CREDENTIALS_KEY must be the base64 of 32 random bytes (e.g. openssl rand -base64 32)")
        }
        key = SymmetricKey(data: bytes)
    }

    /// nil when neither variable is set (credential routes then answer 503).
    package static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> CredentialCipher? {
        if let path = environment["PUSH_CREDENTIALS_KEY_FILE"], !path.isEmpty {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("PUSH_CREDENTIALS_KEY_FILE names a file that cannot be read: \(path)")
            }
            return try CredentialCipher(keyBase64: String(decoding: contents, as: UTF8.self))
        }
        guard let key = environment["PUSH_CREDENTIALS_KEY"], !key.isEmpty else { return nil }
        return try CredentialCipher(keyBase64: key)
    }

    package func seal(_ secret: Data, appId: UUID) throws -> Data {
        try seal(secret, context: appId.uuidString)
    }

    package func open(_ sealed: Data, appId: UUID) throws -> Data {
        try open(sealed, context: appId.uuidString)
    }

    /// Seals a secret bound to `context` (authenticated data): it opens only with the same one.
    package func seal(_ secret: Data, context: String) throws -> Data {
        guard let combined = try AES.GCM.seal(secret, using: key, authenticating: Data(context.utf8)).combined else {
            throw ConfigurationError("AES-GCM produced no combined box")
        }
        return combined
    }

    package func open(_ sealed: Data, context: String) throws -> Data {
        try AES.GCM.open(AES.GCM.SealedBox(combined: sealed), using: key, authenticating: Data(context.utf8))
    }
}
