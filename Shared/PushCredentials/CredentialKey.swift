import Crypto
import Foundation
import PushRuntime

/// One AES-256 key of the credentials key ring, with the id every sealed row records.
///
/// The id is the first 8 bytes (16 hex digits) of SHA-256 over a fixed label and the key: it names
/// the key in the database, in errors and in `pushctl credentials reseal`'s report without saying
/// anything usable about the key itself. The same key always has the same id, so no id has to be
/// configured or kept in step across services.
package struct CredentialKey: Sendable {
    package let id: String
    let key: SymmetricKey

    /// `setting` names where the key came from, for the error (never the key's text).
    package init(base64: String, setting: String) throws(ConfigurationError) {
        guard let bytes = Data(base64Encoded: base64.trimmingCharacters(in: .whitespacesAndNewlines)), bytes.count == 32 else {
            throw ConfigurationError("\(setting) must be the base64 of 32 random bytes (e.g. openssl rand -base64 32)")
        }
        key = SymmetricKey(data: bytes)
        id = Self.id(of: bytes)
    }

    static func id(of bytes: Data) -> String {
        let digest = SHA256.hash(data: Data("push-credentials-key-id:".utf8) + bytes)
        return digest.prefix(8).map { String(format: "%02x", $0) }.joined()
    }
}
