import Foundation
import Logging
import Metrics
import PostgresNIO
import PushEvents
import PushStore

/// Slots of one delivery this process reserved and has not used yet, evenly spaced.
package struct SlotBatch: Sendable, Equatable {
    package private(set) var next: Date
    package let interval: TimeInterval
    package private(set) var remaining: Int

    package init(first: Date, interval: TimeInterval, count: Int) {
        next = first
        self.interval = interval
        remaining = count
    }

    /// The next slot still usable at `now`; the slots more than `ThrottleRate.lateness` past are
    /// dropped (lost: slower, never faster). Nil when none is left.
    package mutating func take(now: Date) -> Date? {
        let late = now.timeIntervalSince(next) - ThrottleRate.lateness
        if late > 0, remaining > 0 {
            let dropped = min(remaining, Int((late / interval).rounded(.up)))
            next = next.addingTimeInterval(Double(dropped) * interval)
            remaining -= dropped
        }
        guard remaining > 0, ThrottleRate.usable(next, now: now) else { return nil }
        defer {
            next = next.addingTimeInterval(interval)
            remaining -= 1
        }
        return next
    }
}

/// The send slots of throttled deliveries, shared by every sender instance (both providers,
/// both lanes) through `push.delivery_throttle`: one statement reserves a batch of a delivery's
/// slots (about a tenth of a second of them) by moving its `next_slot` forward, so the rate
/// holds across instances, rebalances, restarts and retries. Slots an instance reserved and did
/// not use (it died, or they went stale) are lost. Unthrottled messages never come here.
package actor ThrottleSlots {
    let postgres: PostgresClient
    /// How long one statement may wait: past it the reservation fails as if PostgreSQL were
    /// unreachable (a statement can go unanswered for good: `withStatementDeadline`).
    let statementDeadline: Duration
    let logger: Logger
    let now: @Sendable () -> Date
    private var batches: [String: [SlotBatch]] = [:]
    /// The last few `local clock − database clock` differences seen on an answer; the smallest
    /// is the one used (see `reserve`).
    private var offsets = ClockOffsets()
    /// `push_sender_throttle_reservations_total{provider}`: statements that reserved a batch.
    private let reservations: Counter

    package init(
        postgres: PostgresClient, provider: String, statementDeadline: Duration = .seconds(10), logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.postgres = postgres
        self.statementDeadline = statementDeadline
        self.logger = logger
        self.now = now
        reservations = Counter(label: "push_sender_throttle_reservations_total", dimensions: [("provider", provider)])
    }

    /// The next slot of `deliveryId` (a wall-clock instant of this host), reserving a batch when
    /// none is left here.
    package func slot(deliveryId: String, rate: ThrottleRate) async throws -> Date {
        while true {
            if let slot = takeLocal(deliveryId) { return slot }
            let batch = try await reserve(deliveryId: deliveryId, rate: rate)
            batches[deliveryId, default: []].append(batch)
        }
    }

    private func takeLocal(_ deliveryId: String) -> Date? {
        guard var queue = batches[deliveryId] else { return nil }
        let now = now()
        var slot: Date?
        while slot == nil, !queue.isEmpty {
            slot = queue[0].take(now: now)
            if queue[0].remaining == 0 { queue.removeFirst() }
        }
        batches[deliveryId] = queue.isEmpty ? nil : queue
        return slot
    }

    /// One statement: the delivery's timeline moves forward by a batch from where it is, or from
    /// now when it lies in the past (an idle delivery does not save up slots). The database's
    /// clock is the timeline's; the slots are moved to this host's clock by `ClockOffsets`: the
    /// clocks' skew plus the quickest one-way trip seen. A process's first reservation is made
    /// after a few clock readings of its own, so a first answer that came late (a process that
    /// just started on a busy host) does not place the first batch late and the next ones on time
    /// (two batches on top of each other).
    private func reserve(deliveryId: String, rate: ThrottleRate) async throws -> SlotBatch {
        if !offsets.primed {
            var samples: [TimeInterval] = []
            for _ in 0..<ClockOffsets.primingReadings {
                let databaseNow = try await withStatementDeadline(statementDeadline) { [postgres, logger] in
                    var read: Date?
                    for try await value in try await postgres.query("SELECT clock_timestamp()", logger: logger).decode(Date.self) { read = value }
                    guard let read else { throw ThrottleError(detail: "SELECT clock_timestamp() returned no row") }
                    return read
                }
                samples.append(now().timeIntervalSince(databaseNow))
            }
            offsets.prime(samples)
            logger.debug("Throttle clock offset", metadata: ["offset.ms": "\(Int((offsets.applied ?? 0) * 1000))"])
        }
        let reserved = try await reserveOnTimeline(deliveryId: deliveryId, rate: rate)
        let offset = offsets.record(now().timeIntervalSince(reserved.databaseNow))
        return SlotBatch(first: reserved.batch.next.addingTimeInterval(offset), interval: reserved.batch.interval, count: reserved.batch.remaining)
    }

    /// The statement alone: a batch of `deliveryId`'s slots on the database's clock, and that
    /// clock when it answered.
    package func reserveOnTimeline(deliveryId: String, rate: ThrottleRate) async throws -> (batch: SlotBatch, databaseNow: Date) {
        try await withStatementDeadline(statementDeadline) { [postgres, logger, reservations] in
            try await Self.reserve(deliveryId: deliveryId, rate: rate, postgres: postgres, logger: logger, reservations: reservations)
        }
    }

    private static func reserve(
        deliveryId: String, rate: ThrottleRate, postgres: PostgresClient, logger: Logger, reservations: Counter
    ) async throws -> (batch: SlotBatch, databaseNow: Date) {
        let count = rate.batchSize
        let span = Int64(count) * rate.intervalMicroseconds
        let rows = try await postgres.query(
            """
            INSERT INTO push.delivery_throttle AS t (delivery_id, next_slot, per_second, updated_at)
            VALUES (\(deliveryId), clock_timestamp() + \(span)::float8 * interval '1 microsecond', \(rate.perSecond), now())
            ON CONFLICT (delivery_id) DO UPDATE
                SET next_slot = greatest(t.next_slot, clock_timestamp()) + \(span)::float8 * interval '1 microsecond',
                    per_second = excluded.per_second, updated_at = now()
            RETURNING next_slot, clock_timestamp()
            """,
            logger: logger
        )
        for try await (nextSlot, databaseNow) in rows.decode((Date, Date).self) {
            reservations.increment()
            let first = nextSlot.addingTimeInterval(-Double(span) / 1_000_000)
            return (SlotBatch(first: first, interval: Double(rate.intervalMicroseconds) / 1_000_000, count: count), databaseNow)
        }
        throw ThrottleError(detail: "push.delivery_throttle returned no row for delivery \(deliveryId)")
    }

    /// The offset from the database's clock to this host's, from the differences `local clock at
    /// the answer − clock_timestamp()` of the last answers. Each is the skew plus that answer's
    /// one-way trip, so the smallest is the closest and never early. Each answer's own difference
    /// would shift each batch by its trip's jitter: on a loaded host two instances' back-to-back
    /// batches landed 8 ms closer than the interval.
    ///
    /// The offset applied only comes down `maxStep` per batch: a batch placed with a larger
    /// offset than the next (the first answers were slow) sends its slots later, on top of the
    /// next batch's, and the provider sees the overlap as a burst above the rate. Coming down
    /// slowly, such an overlap is at most `maxStep` a batch; going up (the quick answers left the
    /// window) only leaves a gap. A step larger than a second is a stepped clock, followed at once.
    struct ClockOffsets {
        static let capacity = 32
        static let primingReadings = 5
        static let maxStep: TimeInterval = 0.002
        private var seen: [TimeInterval] = []
        private var index = 0
        private(set) var applied: TimeInterval?

        var primed: Bool { applied != nil }

        /// The first offset, from readings taken one after the other: the smallest is used, so
        /// one reading delayed by the host's scheduling does not count.
        mutating func prime(_ readings: [TimeInterval]) {
            for reading in readings { append(reading) }
            applied = seen.min()
        }

        /// Records one difference and returns the offset to place a batch with.
        mutating func record(_ offset: TimeInterval) -> TimeInterval {
            append(offset)
            let smallest = seen.min() ?? offset
            guard let previous = applied, previous - smallest <= 1 else {
                applied = smallest
                return smallest
            }
            let next = max(smallest, previous - Self.maxStep)
            applied = next
            return next
        }

        private mutating func append(_ offset: TimeInterval) {
            if seen.count < Self.capacity {
                seen.append(offset)
            } else {
                seen[index] = offset
                index = (index + 1) % Self.capacity
            }
        }
    }

    struct ThrottleError: Error, CustomStringConvertible {
        var detail: String
        var description: String { detail }
    }
}
