import Logging
import PostgresNIO
import PushStore
import Synchronization

/// The delivery ids the channel issued, as `GET /r/` checks a hit's: the planner gives every
/// accepted request a positive 32-bit id written in decimal (`push.delivery_plans`), so a hit
/// naming anything else, or a number the planner never gave, is not stored (docs/tracking.md,
/// "Hits for deliveries the channel never issued").
///
/// Known ids are answered from memory. An id not known yet waits for a reading of the plans that
/// began after it was asked (a delivery's first hits come right after its first sends); readings
/// are at most one every `interval`, so hits made up by a caller cost the database at most that.
/// When the database cannot be read, the hit is stored: a real hit is never lost to an outage.
package final class IssuedDeliveries: Sendable {
    package enum Answer: Sendable, Equatable {
        case issued
        case neverIssued
        /// The plans could not be read: the caller stores the hit.
        case unknown
    }

    private let known = Known()
    private let readings: Readings

    /// The ids read so far, shared by the hot path and the readings.
    private final class Known: Sendable {
        let ids = Mutex<Set<Int32>>([])
        func contains(_ id: Int32) -> Bool { ids.withLock { $0.contains(id) } }
    }

    /// - Parameters:
    ///   - interval: the least time between two readings of the plans.
    ///   - deadline: how long a reading may take before it counts as failed.
    package init(postgres: PostgresClient, interval: Duration = .milliseconds(250), deadline: Duration = .seconds(2), logger: Logger) {
        readings = Readings(known: known, postgres: postgres, interval: interval, deadline: deadline, logger: logger)
    }

    /// Whether `deliveryId` (the URL's second part, as sent) is one the channel issued.
    package func check(_ deliveryId: String) async -> Answer {
        guard let id = Self.issuable(deliveryId) else { return .neverIssued }
        if known.contains(id) { return .issued }
        return await readings.lookUp(id)
    }

    /// The id if `text` is written as the planner writes ids: a positive 32-bit integer in
    /// decimal, no sign, no leading zero.
    static func issuable(_ text: String) -> Int32? {
        guard let first = text.utf8.first, first != UInt8(ascii: "0"), first != UInt8(ascii: "+"), first != UInt8(ascii: "-"),
            let id = Int32(text), id > 0
        else { return nil }
        return id
    }

    /// The readings of `push.delivery_plans`: one at a time, at most one per interval.
    private actor Readings {
        let known: Known
        let postgres: PostgresClient
        let interval: Duration
        let deadline: Duration
        let logger: Logger
        /// When the last reading began, and whether it succeeded (nil while it runs).
        var last: (began: ContinuousClock.Instant, succeeded: Bool?)?
        var waiters: [CheckedContinuation<Void, Never>] = []

        init(known: Known, postgres: PostgresClient, interval: Duration, deadline: Duration, logger: Logger) {
            self.known = known
            self.postgres = postgres
            self.interval = interval
            self.deadline = deadline
            self.logger = logger
        }

        func lookUp(_ id: Int32) async -> Answer {
            let asked = ContinuousClock.now
            while true {
                if known.contains(id) { return .issued }
                if Task.isCancelled { return .unknown }
                if let last, last.began >= asked, let succeeded = last.succeeded {
                    // A reading that began after the question has ended without the id.
                    return succeeded ? .neverIssued : .unknown
                }
                if let last, last.succeeded == nil {
                    await withCheckedContinuation { waiters.append($0) }
                    continue
                }
                if let last, ContinuousClock.now < last.began + interval {
                    try? await Task.sleep(until: last.began + interval)
                    continue
                }
                await read()
            }
        }

        private func read() async {
            let began = ContinuousClock.now
            last = (began, nil)
            var succeeded = true
            do {
                let ids = try await withStatementDeadline(deadline) { [postgres, logger] in
                    var ids: [Int32] = []
                    let rows = try await postgres.query("SELECT delivery_id FROM push.delivery_plans", logger: logger)
                    for try await text in rows.decode(String.self) {
                        if let id = IssuedDeliveries.issuable(text) { ids.append(id) }
                    }
                    return ids
                }
                known.ids.withLock { $0.formUnion(ids) }
            } catch {
                succeeded = false
                logger.warning(
                    "Could not read the issued delivery ids; tracking hits are stored unchecked meanwhile", metadata: ["error": "\(String(reflecting: error))"])
            }
            last = (began, succeeded)
            let waiting = waiters
            waiters = []
            for waiter in waiting { waiter.resume() }
        }
    }
}
