import Metrics
import Synchronization

/// The sender's metrics (docs/senders.md). Labels: `provider` (`apns`, `fcm`), `lane`
/// (`transactional`, `bulk`: each lane's `MessageSender` has its own series), and on the outcome
/// counter `outcome` and `reason` (the provider's reason, a bounded set).
final class SenderMetrics: Sendable {
    let provider: String
    let lane: String
    private let factory: any MetricsFactory
    let sendLatency: Metrics.Timer
    /// From a message's planning to its final status stored (sent, failed, expired, cancelled).
    let plannedToFinal: Metrics.Timer
    let inFlight: Gauge
    let held: Gauge
    let waitingRetries: Gauge
    let resendWindow: Gauge
    let credentialErrors: Counter
    let deadLetters: Counter
    private let deviceQuotas: Counter
    private let projectQuotas: Counter
    private let throttleWaits: [ThrottleWait: Counter]

    /// - Parameter factory: the process's metrics system; a test passes its own to read them.
    init(provider: String, lane: String, factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
        self.provider = provider
        self.lane = lane
        let dimensions = [("provider", provider), ("lane", lane)]
        sendLatency = Metrics.Timer(label: "push_sender_send_duration_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
        plannedToFinal = Metrics.Timer(label: "push_sender_planned_to_final_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds, factory: factory)
        inFlight = Gauge(label: "push_sender_in_flight", dimensions: dimensions, factory: factory)
        held = Gauge(label: "push_sender_held_records", dimensions: dimensions, factory: factory)
        waitingRetries = Gauge(label: "push_sender_retries_waiting", dimensions: dimensions, factory: factory)
        resendWindow = Gauge(label: "push_sender_resend_window", dimensions: dimensions, factory: factory)
        credentialErrors = Counter(label: "push_sender_credential_errors_total", dimensions: dimensions, factory: factory)
        deadLetters = Counter(label: "push_sender_dead_letters_total", dimensions: dimensions, factory: factory)
        deviceQuotas = Counter(label: "push_sender_quota_exceeded_total", dimensions: dimensions + [("scope", "device")], factory: factory)
        projectQuotas = Counter(label: "push_sender_quota_exceeded_total", dimensions: dimensions + [("scope", "project")], factory: factory)
        throttleWaits = Dictionary(
            uniqueKeysWithValues: ThrottleWait.allCases.map {
                ($0, Counter(label: "push_sender_throttle_waits_total", dimensions: dimensions + [("wait", $0.rawValue)], factory: factory))
            })
    }

    /// What a throttled message's slot made it do (`push_sender_throttle_waits_total{wait}`).
    enum ThrottleWait: String, CaseIterable {
        /// Its slot had come: sent at once.
        case onTime = "none"
        /// Waited in memory for a slot within a second.
        case held
        /// Set aside on the retry topic until a slot further away.
        case deferred
        /// Its slot passed while it waited for an in-flight permit: it took another.
        case late
    }

    func throttled(_ wait: ThrottleWait) {
        throttleWaits[wait]?.increment()
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
                    ("provider", provider), ("lane", lane), ("outcome", outcome), ("reason", reason), ("failure_type", failureType),
                ], factory: factory)
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
