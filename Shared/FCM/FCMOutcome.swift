/// What a sender does with one FCM answer. See `FCMResponse.outcome` for the rules.
package enum FCMOutcome: Sendable, Equatable {
    /// Accepted; `name` is `projects/<p>/messages/<id>`.
    case sent(name: String)
    /// The registration token is dead or belongs elsewhere: quarantine it, do not retry.
    case tokenInvalid(reason: String)
    /// The request or payload is wrong: fail the message, no retry, no token action.
    case rejected(reason: String)
    /// The credential is refused (persisting 401/403, THIRD_PARTY_AUTH_ERROR): fail and alert the
    /// operator; no token action.
    case credentialRejected(reason: String)
    /// The project's quota is spent: do not send to it for at least `after` (>= 60 s).
    case quotaExceeded(after: Duration)
    /// One device's message rate is spent: retry this message only, with backoff, not before
    /// `after` when FCM named a delay; the project's other messages go on.
    case deviceQuotaExceeded(after: Duration?)
    /// Transient: retry with backoff and jitter, not before `after` when the server named a delay.
    case retry(reason: String, after: Duration?)
}
