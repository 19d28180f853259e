import Foundation

/// What the sender must do with an APNs answer (the reference table, applied after the client's
/// own handling of ExpiredProviderToken, UnrelatedKeyIdInToken and IdleTimeout).
package enum APNSOutcome: Sendable, Equatable {
    /// Accepted; `apnsId` as APNs echoed it.
    case sent(apnsId: String)
    /// The device token is dead for this app (BadDeviceToken, DeviceTokenNotForTopic, Unregistered,
    /// ExpiredToken): quarantine it unless it re-registered after `invalidSince`.
    case tokenInvalid(reason: APNSReason, invalidSince: Date?)
    /// A bug in the request or configuration (bad headers, PayloadTooLarge, BadPath,
    /// MethodNotAllowed, TooManyProviderTokenUpdates, unknown 4xx): fail the message, no retry.
    case rejected(reason: APNSReason)
    /// The credential is refused (403 certificate/token problems): fail, alert the operator, do
    /// not burn the queue.
    case credentialRejected(reason: APNSReason)
    /// Transient: retry later, after `after` when APNs said so, else with backoff and jitter.
    case retry(reason: APNSReason?, after: Duration?)
}

extension APNSResponse {
    /// The action the reference table prescribes for this answer. Known reasons decide; an unknown
    /// reason falls back on the status (410 dead token, 403 credential, 429/5xx retry, other 4xx
    /// rejected). A reason is never trusted to turn a 200 into a failure.
    package var outcome: APNSOutcome {
        if (200..<300).contains(self.status) {
            return .sent(apnsId: self.apnsId ?? "")
        }
        let reason = self.reason ?? APNSReason(rawValue: "")
        switch reason {
        case .badDeviceToken, .deviceTokenNotForTopic, .unregistered, .expiredToken:
            return .tokenInvalid(reason: reason, invalidSince: self.timestamp)
        case .badCollapseId, .badExpirationDate, .badMessageId, .badPriority, .badTopic, .duplicateHeaders,
            .invalidPushType, .missingDeviceToken, .missingTopic, .payloadEmpty, .topicDisallowed,
            .badPath, .methodNotAllowed, .payloadTooLarge, .tooManyProviderTokenUpdates:
            return .rejected(reason: reason)
        case .badCertificate, .badCertificateEnvironment, .invalidProviderToken, .missingProviderToken, .forbidden,
            .badEnvironmentKeyIdInToken, .expiredProviderToken:
            // ExpiredProviderToken reaches the sender only when the client could not refresh
            // (token younger than 20 minutes: a clock problem) or the fresh token was refused too.
            return .credentialRejected(reason: reason)
        case .idleTimeout, .unrelatedKeyIdInToken:
            // The client already replaced the connection and resent once; a fresh connection
            // later is the cure.
            return .retry(reason: reason, after: self.retryAfter)
        case .tooManyRequests, .internalServerError, .serviceUnavailable, .shutdown:
            return .retry(reason: reason, after: self.retryAfter)
        default:
            return Self.outcome(status: self.status, unknownReason: self.reason, timestamp: self.timestamp, retryAfter: self.retryAfter)
        }
    }

    private static func outcome(status: Int, unknownReason: APNSReason?, timestamp: Date?, retryAfter: Duration?) -> APNSOutcome {
        let reason = unknownReason ?? APNSReason(rawValue: "")
        switch status {
        case 410:
            return .tokenInvalid(reason: reason, invalidSince: timestamp)
        case 401, 403:
            return .credentialRejected(reason: reason)
        case 408, 429, 500...599:
            return .retry(reason: unknownReason, after: retryAfter)
        default:
            // Unknown 4xx, and statuses APNs never sends (1xx, 3xx, > 599): not worth a retry.
            return .rejected(reason: reason)
        }
    }
}
