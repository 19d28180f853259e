import Foundation
import PushWire
import Synchronization

/// Client-side back-off per FCM project after a QUOTA_EXCEEDED for the project's quota (not a
/// device's: `FCMResponse.quotaScope`), so a spent quota does not turn into a storm of refused
/// (and still counted) requests.
///
/// - QUOTA_EXCEEDED pauses new sends to that project, not to others, until
///   `max(minimumPause, Retry-After)` after the answer (a later answer can extend the pause).
/// - When the pause ends, sends resume paced at `initialRate` per second; the rate doubles every
///   `rateDoublingInterval` (slow start). Once it would reach `unthrottledRate` the project is
///   unthrottled again. Another QUOTA_EXCEEDED during recovery pauses again and restarts at
///   `initialRate`. With the defaults (100/s, doubling every 5 s, 10,000/s) recovery takes about
///   35 s, well under FCM's default 600,000 messages a minute per project.
/// - Waiters re-read the (injectable) clock at least every `recheckInterval`, so a test clock that
///   jumps forward releases them, and cancellation ends a wait at once.
package final class FCMProjectThrottle: Sendable {
    package struct Configuration: Sendable {
        /// The least pause after QUOTA_EXCEEDED. Default 60 s.
        package var minimumPause: Duration
        /// Sends per second when a pause ends. Default 100.
        package var initialRate: Double
        /// The rate doubles after each such interval. Default 5 s.
        package var rateDoublingInterval: Duration
        /// Recovery ends when the rate reaches this. Default 10,000 per second.
        package var unthrottledRate: Double
        /// Longest sleep before a waiter reads the clock again. Default 1 s.
        package var recheckInterval: Duration

        package init(
            minimumPause: Duration = .seconds(60),
            initialRate: Double = 100,
            rateDoublingInterval: Duration = .seconds(5),
            unthrottledRate: Double = 10_000,
            recheckInterval: Duration = .seconds(1)
        ) {
            self.minimumPause = minimumPause
            self.initialRate = max(0.001, initialRate)
            self.rateDoublingInterval = rateDoublingInterval
            self.unthrottledRate = unthrottledRate
            self.recheckInterval = recheckInterval
        }
    }

    /// A project's throttle state at one instant.
    package enum Status: Sendable, Equatable {
        case open
        case paused(until: Date)
        /// Paced at `rate` sends per second.
        case recovering(rate: Double)
    }

    private struct ProjectState {
        var pausedUntil: Date
        /// The earliest time the next paced send may go.
        var nextSlot: Date
    }

    package enum Decision: Equatable {
        case go
        /// Paused: wait, then decide again.
        case paused(until: Date)
        /// A pacing slot is reserved for this caller at that time.
        case reserved(at: Date)
    }

    package let configuration: Configuration
    private let now: @Sendable () -> Date
    private let projects = Mutex<[String: ProjectState]>([:])

    package init(configuration: Configuration = Configuration(), now: @escaping @Sendable () -> Date = Date.init) {
        self.configuration = configuration
        self.now = now
    }

    /// Pauses the project for `max(minimumPause, after)` from now (never shortening a pause).
    /// Returns whether this answer began the pause (the project was not paused already): the
    /// other requests in flight when the quota ran out come back refused too.
    @discardableResult
    package func recordQuotaExceeded(project: String, after: Duration) -> Bool {
        let now = self.now()
        let until = now.addingTimeInterval(max(self.configuration.minimumPause, after).seconds)
        return self.projects.withLock { projects in
            let wasPaused = projects[project].map { $0.pausedUntil > now } ?? false
            let pausedUntil = max(until, projects[project]?.pausedUntil ?? until)
            projects[project] = ProjectState(pausedUntil: pausedUntil, nextSlot: pausedUntil)
            return !wasPaused
        }
    }

    /// Returns when a send to `project` may go: at once when the project is open, after the pause
    /// and at the recovery pace otherwise. Throws `.cancelled` when the task is cancelled.
    package func acquire(project: String) async throws(FCMClientError) {
        while true {
            switch self.decide(project: project) {
            case .go:
                return
            case .paused(let until):
                try await self.sleep(until: until)
            case .reserved(let slot):
                try await self.sleep(until: slot)
                return
            }
        }
    }

    package func status(project: String) -> Status {
        let now = self.now()
        return self.projects.withLock { projects in
            guard let state = projects[project] else { return .open }
            if now < state.pausedUntil { return .paused(until: state.pausedUntil) }
            let rate = self.rate(at: now, pausedUntil: state.pausedUntil)
            return rate >= self.configuration.unthrottledRate ? .open : .recovering(rate: rate)
        }
    }

    /// One admission decision at the clock's current time; reserves a pacing slot when recovering.
    package func decide(project: String) -> Decision {
        let now = self.now()
        return self.projects.withLock { projects in
            guard var state = projects[project] else { return .go }
            if now < state.pausedUntil { return .paused(until: state.pausedUntil) }
            if self.rate(at: now, pausedUntil: state.pausedUntil) >= self.configuration.unthrottledRate {
                projects[project] = nil
                return .go
            }
            let slot = max(now, state.nextSlot)
            let slotRate = min(self.rate(at: slot, pausedUntil: state.pausedUntil), self.configuration.unthrottledRate)
            state.nextSlot = slot.addingTimeInterval(1 / slotRate)
            projects[project] = state
            return slot <= now ? .go : .reserved(at: slot)
        }
    }

    private func rate(at time: Date, pausedUntil: Date) -> Double {
        let doubling = max(0.001, self.configuration.rateDoublingInterval.seconds)
        let doublings = max(0, (time.timeIntervalSince(pausedUntil) / doubling).rounded(.down))
        return self.configuration.initialRate * pow(2, min(doublings, 60))
    }

    private func sleep(until date: Date) async throws(FCMClientError) {
        while true {
            let remaining = date.timeIntervalSince(self.now())
            if remaining <= 0 { return }
            do {
                try await Task.sleep(for: min(.timeInterval(remaining), self.configuration.recheckInterval))
            } catch {
                throw FCMClientError(.cancelled, "cancelled while the project was throttled", isRetriable: true)
            }
        }
    }
}
