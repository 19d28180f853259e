import Foundation
import Synchronization

/// OAuth access tokens the simulator's token endpoint handed out, with their account and expiry.
package final class FCMAccessTokens: Sendable {
    package struct Grant: Sendable {
        package var clientEmail: String
        package var projectID: String
        package var expiresAt: Date
    }

    private let grants = Mutex<[String: Grant]>([:])

    package init() {}

    /// Issues a new opaque token valid for `lifetime` seconds.
    package func issue(for account: FCMServiceAccount, lifetime: Int, now: Date = Date()) -> String {
        var random = SystemRandomNumberGenerator()
        let suffix = (0..<4).map { _ in String(random.next() as UInt64, radix: 36) }.joined()
        let token = "ya29.sim-\(suffix)"
        let grant = Grant(clientEmail: account.clientEmail, projectID: account.projectID, expiresAt: now.addingTimeInterval(TimeInterval(lifetime)))
        self.grants.withLock { grants in
            if grants.count > 10_000 {
                grants = grants.filter { $0.value.expiresAt > now }
            }
            grants[token] = grant
        }
        return token
    }

    /// The live grant behind a token, or nil when unknown or expired.
    package func grant(for token: String, now: Date = Date()) -> Grant? {
        guard let grant = self.grants.withLock({ $0[token] }), grant.expiresAt > now else { return nil }
        return grant
    }
}
