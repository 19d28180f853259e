import Foundation
import PushEvents
import Testing

@testable import PushSending

/// Every rule of what becomes of a message in a sender, driven on the value alone: no broker, no
/// database, no provider.
@Suite("MessageLife: what becomes of a message, transition by transition")
struct MessageLifeTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    /// Jitter at its top: a retry waits the full backoff.
    static let rules = MessageLife.Rules(
        retryPolicy: RetryPolicy(base: .seconds(1), maximum: .seconds(60)), pauseRecheck: 5, credentialCooldown: 60, random: { _ in 1 })

    func life(attempt: Int = 1, validFor: TimeInterval = 3_600, notBefore: Date? = nil, perSecond: Int? = nil, slot: Date? = nil) -> MessageLife {
        MessageLife(
            attempt: attempt, validUntil: Self.start.addingTimeInterval(validFor), notBefore: notBefore, throttlePerSecond: perSecond, slot: slot)
    }

    /// A life begun now on an active delivery and sent.
    func inFlight(attempt: Int = 1, validFor: TimeInterval = 3_600, perSecond: Int? = nil, slot: Date? = nil) -> MessageLife {
        var life = life(attempt: attempt, validFor: validFor, perSecond: perSecond, slot: slot)
        let step = life.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        #expect(step == .send)
        #expect(life.state == .inFlight)
        return life
    }

    @Test("a message read on time to an active delivery is sent at once; the provider's acceptance finishes it as sent")
    func sent() {
        var life = inFlight()
        let step = life.answered(.sent(providerMessageId: "p-1"), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
        #expect(step == .finish(.sent(providerMessageId: "p-1")))
        #expect(life.state == .finished)
    }

    @Test("a twin is skipped without an event, whatever else holds")
    func duplicate() {
        var life = life(validFor: -1)
        #expect(life.begin(admitted: false, opening: .unopened(reason: "erased"), control: .cancelled, now: Self.start, rules: Self.rules) == .skip)
        #expect(life.state == .duplicate)
    }

    @Test("a sealed record that cannot be opened fails soft with its reason, counting no attempt, before expiry and controls")
    func unopened() {
        for reason in ["erased", "unreadable"] {
            var life = life(attempt: 3, validFor: -1)
            let step = life.begin(admitted: true, opening: .unopened(reason: reason), control: .cancelled, now: Self.start, rules: Self.rules)
            #expect(step == .finish(.failed(.init(hard: false, reason: reason, attempts: 2))))
        }
    }

    @Test("read at or after its validUntil: expired with no reason, before the delivery's control is looked at")
    func expiredOnRead() {
        var life = life(validFor: 0)
        #expect(life.begin(admitted: true, opening: .opened, control: .cancelled, now: Self.start, rules: Self.rules) == .finish(.expired(reason: nil)))
    }

    @Test("a cancelled delivery's message is cancelled; a paused one's is set aside for the recheck period, or expires if that is past its validity")
    func controls() {
        var cancelled = life()
        #expect(cancelled.begin(admitted: true, opening: .opened, control: .cancelled, now: Self.start, rules: Self.rules) == .finish(.cancelled))

        var paused = life(attempt: 2)
        let step = paused.begin(admitted: true, opening: .opened, control: .paused, now: Self.start, rules: Self.rules)
        #expect(step == .requeue(.init(retried: false, reason: "paused", attempt: 2, notBefore: Self.start.addingTimeInterval(5))))
        #expect(paused.state == .requeued)

        var shortLived = life(validFor: 5)
        #expect(
            shortLived.begin(admitted: true, opening: .opened, control: .paused, now: Self.start, rules: Self.rules)
                == .finish(.expired(reason: "paused")))
    }

    @Test("a message not before a later time is held until then; when due, a delivery cancelled meanwhile cancels it, an active one sends it")
    func heldThenDue() {
        let later = Self.start.addingTimeInterval(30)
        var sent = life(notBefore: later)
        #expect(sent.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules) == .hold(until: later))
        #expect(sent.state == .held)
        #expect(sent.due(control: .active, now: later, rules: Self.rules) == .send)

        var cancelled = life(notBefore: later)
        _ = cancelled.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        #expect(cancelled.due(control: .cancelled, now: later, rules: Self.rules) == .finish(.cancelled))
    }

    @Test("a dead token fails hard and quarantines the device since the provider's time, or now when it gives none")
    func tokenInvalid() {
        let since = Self.start.addingTimeInterval(-86_400)
        var withTime = inFlight(attempt: 2)
        #expect(
            withTime.answered(
                .tokenInvalid(reason: "Unregistered", invalidSince: since), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .finish(.failed(.init(hard: true, reason: "Unregistered", attempts: 2, disabledSince: since))))
        var withoutTime = inFlight()
        #expect(
            withoutTime.answered(
                .tokenInvalid(reason: "UNREGISTERED", invalidSince: nil), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .finish(.failed(.init(hard: true, reason: "UNREGISTERED", attempts: 1, disabledSince: Self.start))))
    }

    @Test("a message the provider refuses as it is fails soft at once, with the attempt it was")
    func failedSoft() {
        var life = inFlight(attempt: 4)
        #expect(
            life.answered(.failed(reason: "PayloadTooLarge"), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .finish(.failed(.init(hard: false, reason: "PayloadTooLarge", attempts: 4))))
    }

    @Test("a transient failure is retried as the next attempt after the backoff, Retry-After or the quota floor; expired when that passes validUntil")
    func retries() {
        var first = inFlight()
        #expect(
            first.answered(.retry(reason: "503"), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .requeue(.init(retried: true, reason: "503", attempt: 2, notBefore: Self.start.addingTimeInterval(1))))
        var third = inFlight(attempt: 3)
        #expect(
            third.answered(.retry(reason: "429", after: .seconds(10)), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .requeue(.init(retried: true, reason: "429", attempt: 4, notBefore: Self.start.addingTimeInterval(10))))
        var quota = inFlight()
        #expect(
            quota.answered(
                .retry(reason: "QUOTA_EXCEEDED", atLeast: .seconds(60), quota: .project), control: .active, suspendedUntil: nil, now: Self.start,
                rules: Self.rules)
                == .requeue(.init(retried: true, reason: "QUOTA_EXCEEDED", attempt: 2, notBefore: Self.start.addingTimeInterval(60))))
        var late = inFlight(validFor: 30)
        #expect(
            late.answered(.retry(reason: "QUOTA_EXCEEDED", atLeast: .seconds(60)), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .finish(.expired(reason: "QUOTA_EXCEEDED")))
    }

    @Test("a refused credential fails the first message and suspends the credential for the cool-down; one refused while suspended waits instead")
    func credentialRejected() {
        var first = inFlight()
        #expect(
            first.answered(
                .credentialRejected(reason: "InvalidProviderToken", credential: "k1"), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules
            )
                == .finish(.failed(.init(hard: false, reason: "InvalidProviderToken", attempts: 1, suspends: ("k1", Self.start.addingTimeInterval(60))))))
        let until = Self.start.addingTimeInterval(42)
        var next = inFlight(attempt: 2)
        #expect(
            next.answered(
                .credentialRejected(reason: "InvalidProviderToken", credential: "k1"), control: .active, suspendedUntil: until, now: Self.start,
                rules: Self.rules)
                == .requeue(.init(retried: false, reason: "InvalidProviderToken", attempt: 2, notBefore: until)))
    }

    @Test("a deferred send keeps its attempt; deferred past validUntil it expires")
    func deferred() {
        let until = Self.start.addingTimeInterval(20)
        var waiting = inFlight()
        #expect(
            waiting.answered(
                .deferred(reason: "credential-unavailable", until: until), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .requeue(.init(retried: false, reason: "credential-unavailable", attempt: 1, notBefore: until)))
        var short = inFlight(validFor: 10)
        #expect(
            short.answered(.deferred(reason: "credential-unavailable", until: until), control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .finish(.expired(reason: "credential-unavailable")))
    }

    @Test("withdrawn before it was written: the control decides; active again, read back at once; a stale slot is counted late")
    func withdrawn() {
        var cancelled = inFlight()
        #expect(cancelled.answered(.withdrawn, control: .cancelled, suspendedUntil: nil, now: Self.start, rules: Self.rules) == .finish(.cancelled))
        var resumed = inFlight()
        #expect(
            resumed.answered(.withdrawn, control: .active, suspendedUntil: nil, now: Self.start, rules: Self.rules)
                == .requeue(.init(retried: false, reason: "withdrawn", attempt: 1, notBefore: Self.start)))
        var stale = inFlight(perSecond: 10, slot: Self.start)
        let later = Self.start.addingTimeInterval(ThrottleRate.lateness + 1)
        #expect(!stale.stillWanted(control: .active, now: later))
        #expect(
            stale.answered(.withdrawn, control: .active, suspendedUntil: nil, now: later, rules: Self.rules)
                == .requeue(.init(retried: false, reason: "throttle-late", attempt: 1, notBefore: later)))
        #expect(stale.throttleWait == .late)
    }

    @Test("still wanted only while the delivery is active and the slot usable")
    func stillWanted() {
        let life = inFlight()
        #expect(life.stillWanted(control: .active, now: Self.start))
        #expect(!life.stillWanted(control: .paused, now: Self.start))
        #expect(!life.stillWanted(control: .cancelled, now: Self.start))
    }

    @Test("throttled: a slot is taken; come, it is sent; within a second, held; further, set aside on the throttled topic with it, or expired first")
    func throttle() {
        var now = life(perSecond: 10)
        #expect(now.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules) == .takeSlot(perSecond: 10))
        #expect(now.state == .pacing)
        #expect(now.paced(slot: Self.start, now: Self.start) == .send)
        #expect(now.slot == Self.start && now.throttleWait == .onTime)

        let soon = Self.start.addingTimeInterval(0.5)
        var held = life(perSecond: 10)
        _ = held.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        #expect(held.paced(slot: soon, now: Self.start) == .hold(until: soon))
        #expect(held.throttleWait == .held)
        #expect(held.due(control: .active, now: soon, rules: Self.rules) == .send, "its slot is carried: no second slot is taken")

        let far = Self.start.addingTimeInterval(30)
        var setAside = life(perSecond: 10)
        _ = setAside.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        #expect(
            setAside.paced(slot: far, now: Self.start) == .requeue(.init(retried: false, reason: "throttle", attempt: 1, notBefore: far, throttleSlot: far)))
        #expect(setAside.throttleWait == .deferred)

        var expiring = life(validFor: 10, perSecond: 10)
        _ = expiring.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        #expect(expiring.paced(slot: far, now: Self.start) == .finish(.expired(reason: "throttle")))
    }

    @Test("a record carrying a usable slot is sent without taking another; a stale one takes a new slot; a rate below 1 fails soft")
    func carriedSlots() {
        var carried = life(perSecond: 10, slot: Self.start)
        #expect(carried.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules) == .send)
        var stale = life(perSecond: 10, slot: Self.start.addingTimeInterval(-ThrottleRate.lateness - 1))
        #expect(stale.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules) == .takeSlot(perSecond: 10))
        var invalid = life(attempt: 2, perSecond: 0)
        #expect(
            invalid.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
                == .finish(.failed(.init(hard: false, reason: "invalid-throttle", attempts: 1))))
    }

    @Test("a permit that came after the slot went stale: the slot is dropped and a new one taken, counted late")
    func lateForSlot() {
        var life = life(perSecond: 10)
        _ = life.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        _ = life.paced(slot: Self.start, now: Self.start)
        let later = Self.start.addingTimeInterval(ThrottleRate.lateness + 1)
        #expect(!life.slotUsable(now: later))
        #expect(life.late(now: later) == .takeSlot(perSecond: 10))
        #expect(life.slot == nil && life.throttleWait == .late && life.state == .pacing)
    }

    @Test("held for a slot when the sender stops: set aside on the throttled topic with its slot")
    func heldWhenStopping() {
        let soon = Self.start.addingTimeInterval(0.5)
        var life = life(perSecond: 10)
        _ = life.begin(admitted: true, opening: .opened, control: .active, now: Self.start, rules: Self.rules)
        _ = life.paced(slot: soon, now: Self.start)
        #expect(life.setAsideHeld() == .requeue(.init(retried: false, reason: "throttle", attempt: 1, notBefore: soon, throttleSlot: soon)))
    }
}
