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

/// Carrying out what a message's life says comes next: pacing (throttled deliveries take a slot
/// of their delivery's shared timeline, `ThrottleSlots`), holding, sending.
extension MessageSender {
    /// Carries `step` out for `work` (its held permit taken, `work.life` the life that decided the
    /// step) until the message is sent, held in the schedule, or has an outcome to publish,
    /// which is returned (already decided in the ledger).
    func carryOut(_ first: MessageLife.Step, of work: Work) async throws -> Outcome? {
        var step = first
        var life = work.life
        while true {
            if let wait = life.throttleWait { metrics.throttled(wait) }
            switch step {
            case .skip:
                return Outcome(record: work.record, events: [], tally: Tally(outcome: "duplicate"))
            case .hold(let until):
                let held = work.with(life)
                let earliest = state.withLock { state -> Bool? in
                    // Stopping: the schedule was handed back already.
                    guard !state.scheduleClosed else { return nil }
                    state.schedule.insert(held, due: until)
                    return state.schedule.nextDue == until
                }
                guard let earliest else {
                    if life.slot != nil {
                        step = life.setAsideHeld()
                        continue
                    }
                    await handBack([held])
                    return nil
                }
                if earliest { scheduleChanged.signal() }
                updateGauges()
                return nil
            case .takeSlot(let perSecond):
                updateGauges()  // the slot may be a database round trip away: see `waitForRoom`
                let slot = try await throttle.slot(deliveryId: work.message.deliveryId, rate: ThrottleRate(perSecond: perSecond))
                step = life.paced(slot: slot, now: now())
            case .send:
                if !inFlight.tryAcquire() {
                    updateGauges()  // about to wait: see `waitForRoom`
                    try await inFlight.acquire()
                }
                // Waiting for a permit made it late: its slot is not used, or it would reach the
                // provider together with the slots after it. The slot rides with the request:
                // checked again when it is written (`send`).
                guard life.slotUsable(now: now()) else {
                    inFlight.release()
                    step = life.late(now: now())
                    continue
                }
                // Unthrottled, the life is the one `work` was made with: no second reference.
                send(life == work.life ? work : work.with(life))
                return nil
            case .finish, .requeue:
                let outcome = try self.outcome(of: step, for: work)
                state.withLock { $0.ledger.decided(work.message.messageId, final: outcome.tally?.isFinal ?? false) }
                return outcome
            }
        }
    }
}
