import Foundation

/// What a provider transport made of one send, in the sender's terms. Each provider maps its own
/// statuses and reasons here (the APNs and FCM tables are in docs/senders.md); the sender turns
/// the outcome into result events, retries and quarantines the same way for both.
package enum SendOutcome: Sendable, Equatable {
    /// Accepted by the provider: `MessageSent` with the provider's id.
    case sent(providerMessageId: String)
    /// The token is dead for good: `MessageFailed` hard and `SubscriptionDisabled` (quarantine).
    /// `invalidSince` is when the provider last knew it invalid (APNs 410 `timestamp`), if it says.
    case tokenInvalid(reason: String, invalidSince: Date?)
    /// This message cannot be sent as it is (payload, headers, topic): `MessageFailed` soft, no retry.
    case failed(reason: String)
    /// The provider refused the app's credentials: `MessageFailed` soft, the operator metric
    /// `push_sender_credential_errors_total`, and the credential is suspended for
    /// `SENDER_CREDENTIAL_COOLDOWN_MS` so the rest of the queue waits instead of failing too.
    case credentialRejected(reason: String, credential: String)
    /// A transient failure (429, 5xx, connection lost): sent again later with backoff, at least
    /// `after` (Retry-After) and at least `atLeast` (FCM project quota: 60 s), until `validUntil`.
    /// `quota` says that the provider answered a spent quota and whose: counted in
    /// `push_sender_quota_exceeded_total{scope}`.
    case retry(reason: String, after: Duration? = nil, atLeast: Duration? = nil, quota: QuotaScope? = nil)
    /// Not attempted (its credential is suspended, or it has none yet): held until `until` without
    /// counting an attempt, until `validUntil`.
    case deferred(reason: String, until: Date)
    /// Withdrawn before it was written (`stillWanted` said no: its delivery was cancelled or
    /// paused while it waited for a stream): nothing sent; the sender applies the control.
    case withdrawn

    /// Whose quota a provider said is spent: what waits because of it.
    package enum QuotaScope: String, Sendable {
        /// One device token's (FCM device message rate, APNs 429 TooManyRequests): only that
        /// message waits.
        case device
        /// An FCM project's: the project's messages are deferred until its pause ends.
        case project
    }
}
