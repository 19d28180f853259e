import Foundation
import PushEvents

/// The life of one message in a sender instance, as a value with pure transitions: no clock, no
/// lock, no I/O. `MessageSender` reads the facts a transition needs (the time, the delivery's
/// control, the throttle's slot, the provider's answer), asks the life what comes next, and
/// carries the step out (sends, schedules, publishes). Every rule of docs/senders.md about what
/// becomes of a message is here, and `MessageLifeTests` drives each one without a server.
///
/// - `fetched` → `duplicate`, `finished`, `requeued`, `held` (its `notBefore`), `pacing` or
///   `inFlight` (`begin`);
/// - `held` → as from `fetched` when its time comes (`due`), or `requeued` when the sender stops
///   (`setAsideHeld`);
/// - `pacing` → `inFlight`, `held` (a slot within a second), `requeued` or `finished` (`paced`);
/// - `inFlight` → `pacing` (`late`), `finished` or `requeued` (`answered`).
///
/// `finished` ends with a final status (`Ending`); `requeued` with a record written back to the
/// retry topic (or the throttled topic) to be read again later, by this instance or another.
struct MessageLife: Sendable, Equatable {
    enum State: Sendable, Equatable {
        /// Read from the topic, not yet looked at.
        case fetched
        /// Waiting in memory until its `notBefore` or its throttle slot (the schedule).
        case held
        /// Waiting for a slot of its delivery's throttle timeline.
        case pacing
        /// Sent; waiting for the provider's answer.
        case inFlight
        /// Ended with a final status.
        case finished
        /// Written back for later (a retry, a deferral, a throttle slot further than a second).
        case requeued
        /// A second record of a message held or finished here: not sent, no event.
        case duplicate
    }

    /// What the sender does next with the message.
    enum Step: Sendable, Equatable {
        /// Nothing: a twin.
        case skip
        /// Keep it in memory until `until`, then `due`.
        case hold(until: Date)
        /// Take a slot of the delivery's throttle timeline at `perSecond`, then `paced`.
        case takeSlot(perSecond: Int)
        /// Send it now (an in-flight permit, then the transport).
        case send
        /// Publish its final status.
        case finish(Ending)
        /// Write it back for later.
        case requeue(Requeue)
    }

    /// A final status, as the result events say it.
    enum Ending: Sendable, Equatable {
        /// `MessageSent`.
        case sent(providerMessageId: String)
        /// `MessageFailed`.
        case failed(Failure)
        /// `MessageExpired`: its `validUntil` came first. `reason` says what it was waiting for
        /// (nil: it was read too late).
        case expired(reason: String?)
        /// `MessageCancelled`.
        case cancelled
    }

    struct Failure: Sendable, Equatable {
        /// `hard` (the token is dead) or `soft`.
        var hard: Bool
        var reason: String
        /// Sends made (the current attempt when the provider answered, one fewer when it was
        /// never sent).
        var attempts: Int
        /// A dead token: the device is quarantined (`SubscriptionDisabled`), invalid since then.
        var disabledSince: Date? = nil
        /// The provider refused the app's credential: it is left alone until then (the sender's
        /// `CredentialSuspensions`).
        var suspends: (credential: String, until: Date)? = nil

        static func == (lhs: Failure, rhs: Failure) -> Bool {
            lhs.hard == rhs.hard && lhs.reason == rhs.reason && lhs.attempts == rhs.attempts
                && lhs.disabledSince == rhs.disabledSince && lhs.suspends?.credential == rhs.suspends?.credential
                && lhs.suspends?.until == rhs.suspends?.until
        }
    }

    /// The message written back: read again at `notBefore`.
    struct Requeue: Sendable, Equatable {
        /// `retried` (a new attempt) or `deferred` (the same attempt, later).
        var retried: Bool
        var reason: String
        var attempt: Int
        var notBefore: Date
        /// Set aside on the throttled topic with this slot (header `push-throttle-slot`);
        /// nil: the retry topic.
        var throttleSlot: Date?
    }

    /// The rules a life follows, from the sender's settings.
    struct Rules: Sendable {
        var retryPolicy: RetryPolicy
        /// How long a paused delivery's message is set aside before it is looked at again.
        var pauseRecheck: TimeInterval
        /// How long a refused credential is left alone.
        var credentialCooldown: TimeInterval
        /// The retry delay's jitter (a test passes a fixed one).
        var random: @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }

        init(
            retryPolicy: RetryPolicy, pauseRecheck: TimeInterval, credentialCooldown: TimeInterval,
            random: @escaping @Sendable (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
        ) {
            self.retryPolicy = retryPolicy
            self.pauseRecheck = pauseRecheck
            self.credentialCooldown = credentialCooldown
            self.random = random
        }
    }

    /// Whether a sealed record could be opened.
    enum Opening: Sendable, Equatable {
        /// Not sealed, or opened with its subject's key.
        case opened
        /// Its subject's key is gone (erased) or does not open the box: not sent.
        case unopened(reason: String)
    }

    private(set) var state = State.fetched
    /// The send being made: 1 for the first.
    let attempt: Int
    let validUntil: Date
    let notBefore: Date?
    /// The delivery's rate; nil: unthrottled.
    let throttlePerSecond: Int?
    /// The throttle slot it holds: carried by a record set aside for it, or taken here.
    private(set) var slot: Date?
    /// How the last transition dealt with the throttle, if it did (the sender counts it in
    /// `push_sender_throttle_waits_total`).
    private(set) var throttleWait: SenderMetrics.ThrottleWait?

    init(attempt: Int, validUntil: Date, notBefore: Date?, throttlePerSecond: Int?, slot: Date?) {
        self.attempt = attempt
        self.validUntil = validUntil
        self.notBefore = notBefore
        self.throttlePerSecond = throttlePerSecond
        self.slot = slot
    }

    init(_ message: some OutgoingMessage, slot: Date?) {
        self.init(
            attempt: message.attempt, validUntil: message.validUntil, notBefore: message.notBefore,
            throttlePerSecond: message.throttlePerSecond, slot: slot)
    }

    // MARK: transitions

    /// A record just read: `admitted` is false for a twin (`MessageLedger`).
    mutating func begin(admitted: Bool, opening: Opening, control: DeliveryControls.State, now: Date, rules: Rules) -> Step {
        throttleWait = nil
        precondition(state == .fetched, "begin from \(state)")
        guard admitted else {
            state = .duplicate
            return .skip
        }
        if case .unopened(let reason) = opening {
            return finish(.failed(Failure(hard: false, reason: reason, attempts: attempt - 1)))
        }
        if validUntil <= now { return finish(.expired(reason: nil)) }
        if let controlled = controlled(control, now: now, rules: rules) { return controlled }
        if let notBefore, notBefore > now {
            state = .held
            return .hold(until: notBefore)
        }
        return pace(now: now)
    }

    /// Its time in the schedule came.
    mutating func due(control: DeliveryControls.State, now: Date, rules: Rules) -> Step {
        throttleWait = nil
        precondition(state == .held, "due from \(state)")
        if let controlled = controlled(control, now: now, rules: rules) { return controlled }
        return pace(now: now)
    }

    /// The throttle timeline gave it `slot`.
    mutating func paced(slot: Date, now: Date) -> Step {
        precondition(state == .pacing, "paced from \(state)")
        switch ThrottleRate.decision(slot: slot, now: now) {
        case .sendNow:
            self.slot = slot
            throttleWait = .onTime
            state = .inFlight
            return .send
        case .wait(let until):
            self.slot = until
            throttleWait = .held
            state = .held
            return .hold(until: until)
        case .deferUntil(let until):
            return setAside(until: until)
        }
    }

    /// Held for a throttle slot when the schedule no longer takes anything (the sender is
    /// stopping and handed its schedule back): set aside with its slot instead.
    mutating func setAsideHeld() -> Step {
        precondition(state == .held && slot != nil, "setAsideHeld from \(state)")
        return setAside(until: slot!)
    }

    /// Its in-flight permit came when its slot could no longer be used: it takes a new one.
    mutating func late(now: Date) -> Step {
        precondition(state == .inFlight, "late from \(state)")
        throttleWait = .late
        slot = nil
        return pace(now: now)
    }

    /// Whether its slot (if any) may still be used at `now`: checked when the in-flight permit
    /// comes and again just before the request is written.
    func slotUsable(now: Date) -> Bool {
        guard let slot else { return true }
        return ThrottleRate.usable(slot, now: now)
    }

    /// Asked just before the request is written: false withdraws it (`SendOutcome.withdrawn`).
    func stillWanted(control: DeliveryControls.State, now: Date) -> Bool {
        control == .active && slotUsable(now: now)
    }

    /// The transport's answer. `suspendedUntil`: when the suspension of the credential a
    /// `credentialRejected` names ends, if it is suspended already.
    mutating func answered(
        _ outcome: SendOutcome, control: DeliveryControls.State, suspendedUntil: Date?, now: Date, rules: Rules
    ) -> Step {
        precondition(state == .inFlight, "answered from \(state)")
        throttleWait = nil
        switch outcome {
        case .sent(let providerMessageId):
            return finish(.sent(providerMessageId: providerMessageId))
        case .tokenInvalid(let reason, let invalidSince):
            return finish(.failed(Failure(hard: true, reason: reason, attempts: attempt, disabledSince: invalidSince ?? now)))
        case .failed(let reason):
            return finish(.failed(Failure(hard: false, reason: reason, attempts: attempt)))
        case .credentialRejected(let reason, let credential):
            // Requests already in flight when the credential was suspended come back refused
            // too: they wait like the rest instead of failing (one failure per cool-down).
            if let suspendedUntil { return deferred(reason: reason, until: suspendedUntil) }
            let until = now.addingTimeInterval(rules.credentialCooldown)
            return finish(.failed(Failure(hard: false, reason: reason, attempts: attempt, suspends: (credential, until))))
        case .retry(let reason, let after, let atLeast, _):
            let delay = rules.retryPolicy.delay(afterAttempt: attempt, after: after, atLeast: atLeast, random: rules.random)
            let due = now.addingTimeInterval(delay.seconds)
            guard due < validUntil else { return finish(.expired(reason: reason)) }
            state = .requeued
            return .requeue(Requeue(retried: true, reason: reason, attempt: attempt + 1, notBefore: due))
        case .withdrawn:
            // The control that withdrew it decides; active again already (a resume in between):
            // sent again at once, without counting an attempt.
            if let controlled = controlled(control, now: now, rules: rules) { return controlled }
            // Active: its throttle slot went stale while it waited for a stream. Read back from
            // the retry topic at once, where it takes a new slot.
            if slotUsable(now: now) { return deferred(reason: "withdrawn", until: now) }
            throttleWait = .late
            return deferred(reason: "throttle-late", until: now)
        case .deferred(let reason, let until):
            return deferred(reason: reason, until: until)
        }
    }

    // MARK: the rules shared by the transitions

    /// A cancelled delivery's message ends; a paused one's is set aside for `pauseRecheck`. Nil:
    /// the delivery is active.
    private mutating func controlled(_ control: DeliveryControls.State, now: Date, rules: Rules) -> Step? {
        switch control {
        case .active: nil
        case .cancelled: finish(.cancelled)
        case .paused: deferred(reason: "paused", until: now.addingTimeInterval(rules.pauseRecheck))
        }
    }

    /// Sent at once when unthrottled or its carried slot came; otherwise a slot to take.
    private mutating func pace(now: Date) -> Step {
        guard let perSecond = throttlePerSecond else {
            state = .inFlight
            return .send
        }
        // The planner never writes one; a record that does is not sent at an unknown rate.
        guard perSecond >= 1 else { return finish(.failed(Failure(hard: false, reason: "invalid-throttle", attempts: attempt - 1))) }
        state = .pacing
        if let slot, ThrottleRate.usable(slot, now: now) { return paced(slot: slot, now: now) }
        return .takeSlot(perSecond: perSecond)
    }

    /// Set aside on the throttled topic until its slot, unless it expires first.
    private mutating func setAside(until: Date) -> Step {
        throttleWait = .deferred
        guard until < validUntil else { return finish(.expired(reason: "throttle")) }
        state = .requeued
        return .requeue(Requeue(retried: false, reason: "throttle", attempt: attempt, notBefore: until, throttleSlot: until))
    }

    /// The same attempt, later; expired if its `validUntil` comes first.
    private mutating func deferred(reason: String, until: Date) -> Step {
        guard until < validUntil else { return finish(.expired(reason: reason)) }
        state = .requeued
        return .requeue(Requeue(retried: false, reason: reason, attempt: attempt, notBefore: until))
    }

    private mutating func finish(_ ending: Ending) -> Step {
        state = .finished
        return .finish(ending)
    }
}
