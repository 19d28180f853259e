import Crypto
import Foundation
import Synchronization

/// The provider token (ES256 JWT) of one signing key, shared by every connection and pool of an
/// `APNSClient` that uses the key. APNs wants one token per key reused for up to an hour, and
/// refuses a new one within 20 minutes of the previous (TooManyProviderTokenUpdates), so the
/// token is minted lazily, reused until `refreshInterval` has passed, and never replaced
/// before it is 20 minutes old, whatever APNs says.
final class APNSProviderToken: Sendable {
    struct Minted: Sendable, Equatable {
        /// The compact JWT; never logged.
        var jwt: String
        var issuedAt: Date
    }

    let teamId: String
    let keyId: String
    private let key: P256.Signing.PrivateKey
    private let refreshInterval: Duration
    private let now: @Sendable () -> Date
    private let current = Mutex<Minted?>(nil)
    /// Called after each replacement of a token (not the first mint).
    private let onRefresh: @Sendable () -> Void

    init(
        teamId: String,
        keyId: String,
        key: P256.Signing.PrivateKey,
        refreshInterval: Duration,
        now: @escaping @Sendable () -> Date,
        onRefresh: @escaping @Sendable () -> Void
    ) {
        self.teamId = teamId
        self.keyId = keyId
        self.key = key
        self.refreshInterval = refreshInterval
        self.now = now
        self.onRefresh = onRefresh
    }

    /// The token to send now: the current one while younger than `refreshInterval`.
    func token() throws(APNSClientError) -> Minted {
        let now = self.now()
        return try self.current.withLock { (current) throws(APNSClientError) -> Minted in
            if let existing = current, now.timeIntervalSince(existing.issuedAt) < self.refreshInterval.seconds {
                return existing
            }
            let minted = try self.mint(at: now)
            if current != nil { self.onRefresh() }
            current = minted
            return minted
        }
    }

    /// APNs answered ExpiredProviderToken for `rejected`. Returns the token to resend with: a
    /// newer one another request already minted, a new one when `rejected` is at least 20
    /// minutes old, or nil when replacing it now would break the 20-minute floor (a clock
    /// problem: the sender gets the answer).
    func replace(expired rejected: Minted) throws(APNSClientError) -> Minted? {
        let now = self.now()
        return try self.current.withLock { (current) throws(APNSClientError) -> Minted? in
            if let existing = current, existing != rejected {
                return existing
            }
            guard now.timeIntervalSince(rejected.issuedAt) >= APNSClientConfiguration.minimumTokenRefreshInterval.seconds else {
                return nil
            }
            let minted = try self.mint(at: now)
            self.onRefresh()
            current = minted
            return minted
        }
    }

    private func mint(at date: Date) throws(APNSClientError) -> Minted {
        struct Header: Encodable { var alg = "ES256"; var kid: String }
        struct Claims: Encodable { var iss: String; var iat: Int64 }
        let issuedAt = Int64(date.timeIntervalSince1970.rounded(.down))
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let header = Base64URL.encode(try encoder.encode(Header(kid: self.keyId)))
            let claims = Base64URL.encode(try encoder.encode(Claims(iss: self.teamId, iat: issuedAt)))
            let signingInput = "\(header).\(claims)"
            let signature = try self.key.signature(for: Data(signingInput.utf8))
            return Minted(
                jwt: "\(signingInput).\(Base64URL.encode(signature.rawRepresentation))",
                issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt))
            )
        } catch {
            throw .badCredentials("could not sign a provider token for key \(self.keyId)")
        }
    }
}

/// Base64url without padding (RFC 7515 section 2).
enum Base64URL {
    static func encode(_ data: some DataProtocol) -> String {
        var text = Data(data).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }
}

extension Duration {
    /// Whole and fractional seconds, for `Date` arithmetic.
    var seconds: Double {
        let (seconds, attoseconds) = self.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
