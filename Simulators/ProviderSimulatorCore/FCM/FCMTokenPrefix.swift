/// Registration-token prefixes that make the FCM simulator answer with a fixed error. The
/// message must otherwise be valid to reach the prefix rule.
package enum FCMTokenPrefix: CaseIterable, Sendable {
    /// `unreg…` → 404 UNREGISTERED
    case unregistered
    /// `mismatch…` → 403 SENDER_ID_MISMATCH
    case senderIDMismatch
    /// `invalid…` → 400 INVALID_ARGUMENT naming the token
    case invalidToken
    /// `quota…` → 429 QUOTA_EXCEEDED for the device's message rate (every send to the token)
    case quotaExceeded
    /// `unavail…` → 503 UNAVAILABLE with Retry-After: 10
    case unavailable
    /// `internal…` → 500 INTERNAL
    case internalError
    /// `thirdparty…` → 401 THIRD_PARTY_AUTH_ERROR
    case thirdPartyAuthError

    package var prefix: String {
        switch self {
        case .unregistered: "unreg"
        case .senderIDMismatch: "mismatch"
        case .invalidToken: "invalid"
        case .quotaExceeded: "quota"
        case .unavailable: "unavail"
        case .internalError: "internal"
        case .thirdPartyAuthError: "thirdparty"
        }
    }

    package init?(token: String) {
        guard let match = Self.allCases.first(where: { token.hasPrefix($0.prefix) }) else { return nil }
        self = match
    }

    package var error: FCMError {
        switch self {
        case .unregistered: .init(.unregistered, "Requested entity was not found.")
        case .senderIDMismatch: .init(.senderIDMismatch, "SenderId mismatch")
        case .invalidToken: .init(.invalidArgument, "The registration token is not a valid FCM registration token")
        case .quotaExceeded: .deviceQuota
        case .unavailable: .init(.unavailable, "The service is currently unavailable.", retryAfter: 10)
        case .internalError: .init(.internal, "Internal error encountered.")
        case .thirdPartyAuthError: .init(.thirdPartyAuthError, "Auth error from APNS or Web Push Service")
        }
    }
}
