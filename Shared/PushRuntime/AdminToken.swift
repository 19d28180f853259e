import Crypto
import Foundation
import PushRuntime

/// The admin API's bearer token, from `PUSH_ADMIN_TOKEN` or the file named by
/// `PUSH_ADMIN_TOKEN_FILE` (a mounted secret). Only its SHA-256 digest is kept in memory, and
/// requests are compared digest to digest in constant time. Keys other parts need (the
/// console's session signatures) are derived from it (`derivedKey(purpose:)`), so replicas
/// given the same token agree without another secret, and a new token invalidates them.
package struct AdminToken: Sendable {
    private let digest: [UInt8]
    /// False when `PUSH_ADMIN_TOKEN_DISABLED` turns the bootstrap token off as a bearer token
    /// (operators' personal tokens only; the console still derives its keys from it).
    package var acceptsBearer = true
    /// HMAC-SHA256 of the token under a fixed label: the input of `derivedKey(purpose:)`
    /// (neither the token nor its digest).
    private let derivationKey: SymmetricKey

    package init(_ token: String) throws(ConfigurationError) {
        guard token.utf8.count >= 16 else {
            throw ConfigurationError("PUSH_ADMIN_TOKEN must be at least 16 characters")
        }
        digest = Array(SHA256.hash(data: Data(token.utf8)))
        derivationKey = SymmetricKey(
            data: Data(HMAC<SHA256>.authenticationCode(for: Data("push admin token derived keys v1".utf8), using: SymmetricKey(data: Data(token.utf8)))))
    }

    /// A 256-bit key for `purpose` (HKDF-SHA256 over the token): the same for every process
    /// given the same token, unrelated between purposes.
    package func derivedKey(purpose: String) -> SymmetricKey {
        HKDF<SHA256>.deriveKey(inputKeyMaterial: derivationKey, info: Data(purpose.utf8), outputByteCount: 32)
    }

    /// nil when neither variable is set (the admin API then answers 503).
    package static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> AdminToken? {
        guard var token = try secret(fromEnvironment: environment).map({ token throws(ConfigurationError) in try AdminToken(token) }) else { return nil }
        switch environment["PUSH_ADMIN_TOKEN_DISABLED"]?.lowercased() {
        case nil, "", "false", "0", "no": break
        case "true", "1", "yes": token.acceptsBearer = false
        case let other?: throw ConfigurationError("PUSH_ADMIN_TOKEN_DISABLED must be true or false, got '\(other.prefix(16))'")
        }
        return token
    }

    /// The token itself, for a client of the admin APIs (the console): from `PUSH_ADMIN_TOKEN_FILE`
    /// (trimmed) or `PUSH_ADMIN_TOKEN`; nil when neither is set.
    package static func secret(fromEnvironment environment: [String: String]) throws(ConfigurationError) -> String? {
        if let path = environment["PUSH_ADMIN_TOKEN_FILE"], !path.isEmpty {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("PUSH_ADMIN_TOKEN_FILE names a file that cannot be read: \(path)")
            }
            return String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let token = environment["PUSH_ADMIN_TOKEN"], !token.isEmpty else { return nil }
        return token
    }

    /// Whether an `Authorization` header value carries this token (`Bearer <token>`).
    package func accepts(authorization: String?) -> Bool {
        guard acceptsBearer, let authorization, authorization.lowercased().hasPrefix("bearer ") else { return false }
        let presented = Array(SHA256.hash(data: Data(authorization.dropFirst(7).utf8)))
        var difference: UInt8 = 0
        for (left, right) in zip(presented, digest) { difference |= left ^ right }
        return difference == 0
    }
}
