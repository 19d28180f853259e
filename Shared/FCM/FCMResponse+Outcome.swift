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
    /// | QUOTA_EXCEEDED for one device (see `quotaScope`) | `deviceQuotaExceeded(Retry-After)` |
    /// | QUOTA_EXCEEDED otherwise | `quotaExceeded(max(60 s, Retry-After))` |
    /// | UNAVAILABLE, INTERNAL | `retry(Retry-After)` |
    /// | THIRD_PARTY_AUTH_ERROR | `credentialRejected` |
    /// | UNSPECIFIED_ERROR, unknown, none | by status, below |
    ///
    /// Status fallback: 2xx `sent`; 400 `rejected` (or `tokenInvalid` when it names the token);
    /// 401, 403 `credentialRejected` (`send` already refreshed the access token once after a
    /// 401); 408 and 5xx `retry`; 429 as QUOTA_EXCEEDED; any other status `rejected`.
    /// Reasons are the errorCode's raw value, or `http-<status>` when there is no errorCode.
    package var outcome: FCMOutcome {
        let reason = self.errorCode?.rawValue ?? "http-\(self.status)"
        switch self.errorCode {
        case .unregistered?, .senderIdMismatch?:
            return .tokenInvalid(reason: reason)
        case .invalidArgument?:
            return self.namesInvalidToken ? .tokenInvalid(reason: reason) : .rejected(reason: reason)
        case .quotaExceeded?:
            return self.quotaOutcome
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
            return self.quotaOutcome
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

    /// Which quota a QUOTA_EXCEEDED (or bare 429) answer says is spent.
    ///
    /// - With `google.rpc.QuotaFailure` violations: `device` when every violation names a
    ///   device (its `subject` or `description` mentions "device", as in FCM's "Device message
    ///   rate exceeded"); `project` as soon as one does not.
    /// - Without violations: `device` when `error.message` mentions "device".
    /// - Otherwise (a bare 429, an answer that does not say): `project`, as before this
    ///   distinction existed. Firebase asks for at least a minute's back-off after a project
    ///   quota, and a project-wide quota treated as a device's would have every message of the
    ///   project retried into it within seconds until it refills; pausing one project for a
    ///   minute by mistake costs less.
    package var quotaScope: FCMQuotaScope {
        func namesDevice(_ text: String?) -> Bool { text?.lowercased().contains("device") ?? false }
        if !self.quotaViolations.isEmpty {
            return self.quotaViolations.allSatisfy { namesDevice($0.subject) || namesDevice($0.description) } ? .device : .project
        }
        return namesDevice(self.errorMessage) ? .device : .project
    }

    private var quotaOutcome: FCMOutcome {
        switch self.quotaScope {
        case .device: .deviceQuotaExceeded(after: self.retryAfter)
        case .project: .quotaExceeded(after: max(Self.minimumQuotaDelay, self.retryAfter ?? .zero))
        }
    }
}
