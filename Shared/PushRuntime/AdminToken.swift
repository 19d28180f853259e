import Crypto
import Foundation
import PushRuntime

/// The admin API's bearer token, from `PUSH_ADMIN_TOKEN` or the file named by
/// `PUSH_ADMIN_TOKEN_FILE` (a mounted secret). Only its SHA-256 digest is kept in memory, and
/// requests are compared digest to digest in constant time.
package struct AdminToken: Sendable {
    private let digest: [UInt8]

    package init(_ token: String) throws(ConfigurationError) {
        guard token.utf8.count >= 16 else {
            throw ConfigurationError("PUSH_ADMIN_TOKEN must be at least 16 characters")
        }
        digest = Array(SHA256.hash(data: Data(token.utf8)))
    }

    /// nil when neither variable is set (the admin API then answers 503).
    package static func fromEnvironment(_ environment: [String: String]) throws(ConfigurationError) -> AdminToken? {
        if let path = environment["PUSH_ADMIN_TOKEN_FILE"], !path.isEmpty {
            guard let contents = FileManager.default.contents(atPath: path) else {
                throw ConfigurationError("PUSH_ADMIN_TOKEN_FILE names a file that cannot be read: \(path)")
            }
            return try AdminToken(String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
        }
        guard let token = environment["PUSH_ADMIN_TOKEN"], !token.isEmpty else { return nil }
        return try AdminToken(token)
    }

    /// Whether an `Authorization` header value carries this token (`Bearer <token>`).
    package func accepts(authorization: String?) -> Bool {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else { return false }
        let presented = Array(SHA256.hash(data: Data(authorization.dropFirst(7).utf8)))
        var difference: UInt8 = 0
        for (left, right) in zip(presented, digest) { difference |= left ^ right }
        return difference == 0
    }
}
