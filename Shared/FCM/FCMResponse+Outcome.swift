extension FCMResponse {
    /// The least delay after QUOTA_EXCEEDED (Firebase: wait at least a minute).
    package static let minimumQuotaDelay: Duration = .seconds(60)

    /// The sender's action for this answer: on `errorCode` first, then on the HTTP status.
    ///
    /// | errorCode | outcome |
    /// |---|---|
    /// | UNREGISTERED, SENDER_ID_MISMATCH | `tokenInvalid` |
    /// | INVALID_ARGUMENT naming the token (see `namesInvalidToken`) | `tokenInvalid` |
    /// | INVALID_ARGUMENT otherwise | `rejected` |
    /// | QUOTA_EXCEEDED | `quotaExceeded(max(60 s, Retry-After))` |
    /// | UNAVAILABLE, INTERNAL | `retry(Retry-After)` |
    /// | THIRD_PARTY_AUTH_ERROR | `credentialRejected` |
    /// | UNSPECIFIED_ERROR, unknown, none | by status, below |
    ///
    /// Status fallback: 2xx `sent`; 400 `rejected` (or `tokenInvalid` when it names the token);
    /// 401, 403 `credentialRejected` (`send` already refreshed the access token once after a
    /// 401); 408 and 5xx `retry`; 429 `quotaExceeded`; any other status `rejected`.
    /// Reasons are the errorCode's raw value, or `http-<status>` when there is no errorCode.
    package var outcome: FCMOutcome {
        let reason = self.errorCode?.rawValue ?? "http-\(self.status)"
        switch self.errorCode {
        case .unregistered?, .senderIdMismatch?:
            return .tokenInvalid(reason: reason)
        case .invalidArgument?:
            return self.namesInvalidToken ? .tokenInvalid(reason: reason) : .rejected(reason: reason)
        case .quotaExceeded?:
            return .quotaExceeded(after: self.quotaDelay)
        case .unavailable?, .internal?:
            return .retry(reason: reason, after: self.retryAfter)
        case .thirdPartyAuthError?:
            return .credentialRejected(reason: reason)
        default:
            break
        }
        switch self.status {
        case 200..<300:
            return .sent(name: self.name ?? "")
        case 400:
            return self.namesInvalidToken ? .tokenInvalid(reason: reason) : .rejected(reason: reason)
        case 401, 403:
            return .credentialRejected(reason: reason)
        case 408, 500..<600:
            return .retry(reason: reason, after: self.retryAfter)
        case 429:
            return .quotaExceeded(after: self.quotaDelay)
        default:
            return .rejected(reason: reason)
        }
    }

    /// Whether an INVALID_ARGUMENT names the registration token itself as invalid, so the token
    /// (not the payload) is at fault. True when a field violation is on `message.token`, or the
    /// message mentions the registration token ("The registration token is not a valid FCM
    /// registration token", as Firebase and the simulator say) or `message.token`. Payload
    /// problems ("Invalid value at 'message.data[...]'", "Message is too big", reserved keys)
    /// name other fields and stay `rejected`.
    package var namesInvalidToken: Bool {
        if self.fieldViolations.contains(where: { $0 == "message.token" }) { return true }
        guard let message = self.errorMessage?.lowercased() else { return false }
        return message.contains("registration token") || message.contains("message.token")
    }

    private var quotaDelay: Duration {
        max(Self.minimumQuotaDelay, self.retryAfter ?? .zero)
    }
}
