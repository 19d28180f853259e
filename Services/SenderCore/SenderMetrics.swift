import Metrics
import Synchronization

/// The sender's metrics (docs/senders.md). Labels: `provider` (`apns`, `fcm`), and on the
/// outcome counter `outcome` and `reason` (the provider's reason, a bounded set).
final class SenderMetrics: Sendable {
    let provider: String
    let sendLatency: Metrics.Timer
    let inFlight: Gauge
    let held: Gauge
    let waitingRetries: Gauge
    let resendWindow: Gauge
    let credentialErrors: Counter
    let deadLetters: Counter
    private let deviceQuotas: Counter
    private let projectQuotas: Counter

    init(provider: String) {
        self.provider = provider
        let dimensions = [("provider", provider)]
        sendLatency = Metrics.Timer(label: "push_sender_send_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
        inFlight = Gauge(label: "push_sender_in_flight", dimensions: dimensions)
        held = Gauge(label: "push_sender_held_records", dimensions: dimensions)
        waitingRetries = Gauge(label: "push_sender_retries_waiting", dimensions: dimensions)
        resendWindow = Gauge(label: "push_sender_resend_window", dimensions: dimensions)
        credentialErrors = Counter(label: "push_sender_credential_errors_total", dimensions: dimensions)
        deadLetters = Counter(label: "push_sender_dead_letters_total", dimensions: dimensions)
        deviceQuotas = Counter(label: "push_sender_quota_exceeded_total", dimensions: dimensions + [("scope", "device")])
        projectQuotas = Counter(label: "push_sender_quota_exceeded_total", dimensions: dimensions + [("scope", "project")])
    }

    /// `push_sender_quota_exceeded_total{provider, scope}`: provider answers that a quota is
    /// spent, by whose: `device` (that message waits) or `project` (the FCM project pauses).
    func quotaExceeded(_ scope: SendOutcome.QuotaScope) -> Counter {
        switch scope {
        case .device: deviceQuotas
        case .project: projectQuotas
        }
    }

    /// `push_sender_messages_total{provider, outcome, reason}`: outcome is `sent`, `failed`
    /// (with `failure_type` hard/soft), `retried`, `deferred`, `expired`, `cancelled`, `handed_back`,
    /// `duplicate` (a twin record not sent, `MessageLedger`).
    func count(_ outcome: String, reason: String = "", failureType: String = "") {
        let key = OutcomeKey(outcome: outcome, reason: reason, failureType: failureType)
        // One counter per label set, looked up once: making one per message went through the
        // metrics factory's registry every time.
        let counter = outcomes.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Counter(
                label: "push_sender_messages_total",
                dimensions: [
                    ("provider", provider), ("outcome", outcome), ("reason", reason), ("failure_type", failureType),
                ])
            counters[key] = counter
            return counter
        }
        counter.increment()
    }

    private struct OutcomeKey: Hashable {
        var outcome: String
        var reason: String
        var failureType: String
    }

    private let outcomes = Mutex<[OutcomeKey: Counter]>([:])
}
