/// Which quota an FCM QUOTA_EXCEEDED answer says is spent, and so what must wait.
///
/// FCM answers 429 QUOTA_EXCEEDED for three limits (Firebase's ErrorCode reference): the
/// project's message rate, one device's message rate, and one topic's. The answer says which in
/// a `google.rpc.QuotaFailure` detail (its violations' `subject` and `description`) and in
/// `error.message` ("Device message rate exceeded"). This channel sends to tokens only, so a
/// topic quota does not arise. See `FCMResponse.quotaScope` for how an answer is read.
package enum FCMQuotaScope: String, Sendable, Hashable {
    /// One device receives too many messages: only that message waits (backoff, Retry-After).
    case device
    /// The project's quota is spent: every message of the project waits (at least 60 s).
    case project
}
