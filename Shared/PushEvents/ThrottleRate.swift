import Foundation

/// The slot arithmetic of a throttled delivery (docs/senders.md, "Throttle"): pure, so that it is
/// unit-tested apart from PostgreSQL.
///
/// Slots are spaced `interval` apart on one timeline per delivery, at `targetFraction` of the
/// rate. A slot is used at most once, never before its time, and never more than `lateness` after
/// it (a later one is dropped and a new slot taken). So the sends of any one-second window hold
/// slots from a window of 1 s + `lateness`: at most ⌈(1 + lateness) / interval⌉ of them, which
/// is 0.87125 × perSecond rounded up, at most perSecond for every perSecond ≥ 1. What is left
/// (about 150 ms of slots) is room for the jitter between the send and the provider's arrival:
/// measured on a loaded 2-core host, one request took 47 ms longer than its neighbours, and at
/// 0.9 (85 ms of room) the start of a kill test reached the provider 41 times in a second at 40.
package struct ThrottleRate: Sendable, Equatable {
    /// The share of `perSecond` the timeline hands out.
    package static let targetFraction = 0.85
    /// How much of the timeline one reservation takes: a tenth of a second of slots.
    package static let batchSeconds = 0.1
    /// How late a slot may still be used.
    package static let lateness: TimeInterval = 0.025
    /// A message whose slot is further away than this is deferred to the retry topic instead of
    /// waiting in memory.
    package static let deferBeyond: TimeInterval = 1

    package let perSecond: Int

    /// - Precondition: `perSecond` ≥ 1 (the message decoder refuses less).
    package init(perSecond: Int) {
        precondition(perSecond >= 1, "a throttle of \(perSecond) per second")
        self.perSecond = perSecond
    }

    /// Microseconds between two slots: 1 / (0.85 × perSecond) s, rounded up (never faster).
    package var intervalMicroseconds: Int64 {
        Int64((1_000_000 / (Self.targetFraction * Double(perSecond))).rounded(.up))
    }

    /// Slots per reservation: as many as fit in a tenth of a second, at least one.
    package var batchSize: Int {
        max(1, Int(Int64(Self.batchSeconds * 1_000_000) / intervalMicroseconds))
    }

    /// Whole messages a second the timeline sustains (at least 1): the planner fans a throttled
    /// delivery out no faster, so that the senders' timeline keeps up with what is published and
    /// no backlog of the delivery piles up in the senders' memory.
    package var sustainedPerSecond: Int {
        max(1, Int(1_000_000 / intervalMicroseconds))
    }

    /// What to do with a message whose slot is `slot`.
    package static func decision(slot: Date, now: Date) -> Decision {
        if slot <= now { return .sendNow }
        if slot.timeIntervalSince(now) <= deferBeyond { return .wait(until: slot) }
        return .deferUntil(slot)
    }

    /// Whether a slot carried by a record (read back from the retry topic, or waited for in
    /// memory) may still be used at `now`.
    package static func usable(_ slot: Date, now: Date) -> Bool {
        now.timeIntervalSince(slot) <= lateness
    }

    package enum Decision: Sendable, Equatable {
        /// The slot has come.
        case sendNow
        /// Within `deferBeyond`: wait in memory, without an in-flight permit.
        case wait(until: Date)
        /// Further: set aside on the retry topic with its slot.
        case deferUntil(Date)
    }
}
