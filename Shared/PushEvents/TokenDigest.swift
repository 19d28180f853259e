import Crypto
import Foundation
import PushWire

/// How every event written since records are sealed names a device without its token: the lowercase hex
/// SHA-256 of the token's UTF-8 bytes, equal to `push.subscriptions.token_digest` (and to
/// PostgreSQL's `push.token_digest(token)`). A digest is not a secret (anyone holding a token can
/// compute it), but it cannot be turned back into the token, so a topic that names devices by
/// digest holds nothing readable about an erased person (docs/architecture.md, "Erasure").
package enum TokenDigest {
    /// The digest of `token`.
    package static func of(_ token: String) -> String {
        hex(SHA256.hash(data: Array(token.utf8)))
    }

    private static let digits = Array("0123456789abcdef".utf8)

    /// Lowercase hex of `bytes` (a digest, a data key).
    package static func hex(_ bytes: some Sequence<UInt8>) -> String {
        var text = [UInt8]()
        text.reserveCapacity(64)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0f)])
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The record key of a device's events on `push.subscriptions`: `<appId>:<tokenDigest>`.
    package static func subscriptionKey(appId: UUID, tokenDigest: String) -> String {
        "\(appId.lowercaseText):\(tokenDigest)"
    }
}
