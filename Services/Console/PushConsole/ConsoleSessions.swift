import Crypto
import Foundation
import PushRuntime
import PushWire

/// The console's session cookies, signed with HMAC-SHA256 under a key derived from the admin
/// token, so any replica given the same token accepts them (docs/console.md, "Signing in"):
///
/// - `v1.<expiry>.<random nonce>.<mac>`: signed in with the admin token; no server state.
/// - `v2.<expiry>.<session token>.<mac>`: a named operator's session, whose token the
///   registration's admin API issued at sign-in (`POST /admin/v1/sessions`) and checks on every
///   page (`GET /admin/v1/session`): sign-out revokes it, and an operator deactivated or a
///   token revoked is signed out from the next page.
///
/// The CSRF token of a session is a second HMAC of its nonce (or token): a form posted with
/// another session's token, or none, is refused.
package struct ConsoleSessions: Sendable {
    /// The cookie's name.
    package static let cookieName = "push_console_session"

    let key: SymmetricKey
    let lifetime: Duration

    package init(key: SymmetricKey, lifetime: Duration) {
        self.key = key
        self.lifetime = lifetime
    }

    /// A signed-in session.
    package struct Session: Sendable, Equatable {
        package var expiresAt: Int64
        package var nonce: String
        /// The token every form of this session carries.
        package var csrfToken: String
        /// A named operator's session token (a `v2` cookie), the bearer of its admin API calls;
        /// nil: signed in with the admin token.
        package var bearer: String?
    }

    /// A new session's cookie value, valid until `now + lifetime`.
    package func issue(now: Date = Date()) -> String {
        let expires = Int64(now.timeIntervalSince1970) + lifetime.components.seconds
        let nonce = Base64URL.encode(Data((0..<16).map { _ in UInt8.random(in: 0...255) }))
        let body = "v1.\(expires).\(nonce)"
        return "\(body).\(mac(body))"
    }

    /// A named operator's session cookie: its session token, until the token's expiry.
    package func issue(bearer: String, expiresAt: Date) -> String {
        let body = "v2.\(Int64(expiresAt.timeIntervalSince1970)).\(bearer)"
        return "\(body).\(mac(body))"
    }

    /// The session a cookie value stands for, or nil when it is malformed, forged or expired.
    package func session(cookie: String?, now: Date = Date()) -> Session? {
        guard let cookie, cookie.utf8.count < 300 else { return nil }
        let parts = cookie.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "v1" || parts[0] == "v2", let expires = Int64(parts[1]), !parts[2].isEmpty else { return nil }
        let body = parts[0...2].joined(separator: ".")
        guard Self.constantTimeEqual(mac(body), String(parts[3])) else { return nil }
        guard Int64(now.timeIntervalSince1970) < expires else { return nil }
        let nonce = String(parts[2])
        return Session(expiresAt: expires, nonce: nonce, csrfToken: mac("csrf.\(nonce)"), bearer: parts[0] == "v2" ? nonce : nil)
    }

    /// The sign-in form's own token (no session yet): its expiry, signed; good for an hour.
    package func signInFormToken(now: Date = Date()) -> String {
        let expires = Int64(now.timeIntervalSince1970) + 3600
        return "\(expires).\(mac("signin.\(expires)"))"
    }

    package func acceptsSignInFormToken(_ token: String?, now: Date = Date()) -> Bool {
        guard let token else { return false }
        let parts = token.split(separator: ".", maxSplits: 1)
        guard parts.count == 2, let expires = Int64(parts[0]), Int64(now.timeIntervalSince1970) < expires else { return false }
        return Self.constantTimeEqual(mac("signin.\(expires)"), String(parts[1]))
    }

    func mac(_ text: String) -> String {
        Base64URL.encode(Data(HMAC<SHA256>.authenticationCode(for: Data(text.utf8), using: key)))
    }

    package static func constantTimeEqual(_ left: String, _ right: String) -> Bool {
        let a = Array(left.utf8)
        let b = Array(right.utf8)
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}
