import Foundation
import Kafka
import PushEvents
import PushStore

/// The throttle slot a record set aside for it carries: header `push-throttle-slot`, milliseconds
/// since the epoch (docs/senders.md, "Throttle").
enum ThrottleHeader {
    static let name = "push-throttle-slot"

    static func slot(in headers: [KafkaHeader]) -> Date? {
        guard let text = headers.string(name), let milliseconds = Int64(text) else { return nil }
        return Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    static func header(_ slot: Date) -> KafkaHeader {
        // Rounded up: a slot is never used before its time.
        KafkaHeader(name: name, string: String(Int64((slot.timeIntervalSince1970 * 1000).rounded(.up))))
    }
}

/// Throttled deliveries: each message is sent at a slot of its delivery's shared timeline
/// (`ThrottleSlots`); unthrottled messages pass straight through.
extension MessageSender {
    enum Paced {
        /// Send now; `slot` is the throttle slot it holds (nil: unthrottled).
        case send(slot: Date?)
        /// Waiting in memory for its slot (in the schedule, without an in-flight permit).
        case waiting
        /// Set aside on the throttled topic until its slot (or expired): this outcome to publish.
        case setAside(Outcome)
    }

    /// Sends `work` (its held permit taken) when its throttle slot comes: at once when it is
    /// unthrottled or its slot came, later from the schedule when the slot is within a second,
    /// or set aside on the throttled topic. Returns the outcome to publish when set aside.
    func paceAndSend(_ work: Work) async throws -> Outcome? {
        var work = work
        while true {
            switch try await pace(work) {
            case .waiting:
                return nil
            case .setAside(let outcome):
                return outcome
            case .send(let slot):
                try await inFlight.acquire()
                // Waiting for a permit made it late: its slot is not used, or it would reach the
                // provider together with the slots after it.
                if let slot, !ThrottleRate.usable(slot, now: now()) {
                    inFlight.release()
                    metrics.throttled(.late)
                    work = work.with(slot: nil)
                    continue
                }
                // The slot rides with the request: checked again when it is written (`send`).
                send(work.with(slot: slot))
                return nil
            }
        }
    }

    /// Where `work` stands with its delivery's throttle.
    func pace(_ work: Work) async throws -> Paced {
        guard let perSecond = work.message.throttlePerSecond else { return .send(slot: nil) }
        guard perSecond >= 1 else {
            // The planner never writes one; a record that does is not sent at an unknown rate.
            let failed = MessageFailed(
                message: work.message.reference, failureType: "soft", reason: "invalid-throttle", attempts: work.message.attempt - 1, failedAt: now())
            decided(work, final: true)
            return .setAside(
                Outcome(
                    record: work.record, events: [try result(failed, of: work)],
                    tally: Tally(outcome: "failed", reason: "invalid-throttle", failureType: "soft"), plannedAt: work.message.plannedAt))
        }
        let slot: Date
        if let carried = work.slot, ThrottleRate.usable(carried, now: now()) {
            slot = carried
        } else {
            slot = try await throttle.slot(deliveryId: work.message.deliveryId, rate: ThrottleRate(perSecond: perSecond))
        }
        let now = now()
        switch ThrottleRate.decision(slot: slot, now: now) {
        case .sendNow:
            metrics.throttled(.onTime)
            return .send(slot: slot)
        case .wait(let until):
            let scheduled = state.withLock { state -> Bool? in
                // Stopping: the schedule was handed back already; set it aside with its slot instead.
                guard !state.scheduleClosed else { return nil }
                state.schedule.insert(work.with(slot: until), due: until)
                return state.schedule.nextDue == until
            }
            guard let earliest = scheduled else { return try setAside(work, until: until, at: now) }
            metrics.throttled(.held)
            if earliest { scheduleChanged.signal() }
            updateGauges()
            return .waiting
        case .deferUntil(let until):
            return try setAside(work, until: until, at: now)
        }
    }

    /// Sets `work` aside on the throttled topic until its slot `until`, the slot in its header:
    /// read back by the throttled topic's consumer, whose budget it counts against, never this
    /// lane's (docs/senders.md, "Throttle").
    private func setAside(_ work: Work, until: Date, at now: Date) throws -> Paced {
        metrics.throttled(.deferred)
        guard until < work.message.validUntil else {
            decided(work, final: true)
            return .setAside(
                Outcome(
                    record: work.record, events: [try expired(work, at: now)], tally: Tally(outcome: "expired", reason: "throttle"),
                    plannedAt: work.message.plannedAt))
        }
        var next = work.message
        next.notBefore = until
        var record = try retryRecord(next, of: work, topic: topics.throttled)
        record.headers.append(ThrottleHeader.header(until))
        decided(work, final: false)
        return .setAside(Outcome(record: work.record, events: [record], tally: Tally(outcome: "deferred", reason: "throttle")))
    }
}
