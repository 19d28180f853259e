import FCM
import Foundation
import PushTestSupport
import Testing

@Suite("FCMProjectThrottle: pause per project, then slow start (injected clock)")
struct FCMProjectThrottleTests {
    @Test("QUOTA_EXCEEDED pauses only its project, for max(60 s, Retry-After), then paces at a doubling rate")
    func pauseAndRecovery() {
        let clock = ManualClock(Date(timeIntervalSince1970: 10_000))
        let throttle = FCMProjectThrottle(
            configuration: .init(initialRate: 10, rateDoublingInterval: .seconds(2), unthrottledRate: 80),
            now: clock.now
        )
        #expect(throttle.decide(project: "a") == .go)
        #expect(throttle.recordQuotaExceeded(project: "a", after: .seconds(5)), "the first refusal begins the pause")
        #expect(throttle.status(project: "a") == .paused(until: Date(timeIntervalSince1970: 10_060)))
        #expect(throttle.decide(project: "b") == .go)
        #expect(throttle.decide(project: "a") == .paused(until: Date(timeIntervalSince1970: 10_060)))

        // A longer Retry-After wins; a shorter one never shortens the pause.
        #expect(!throttle.recordQuotaExceeded(project: "a", after: .seconds(90)), "a refusal during the pause only extends it")
        #expect(throttle.status(project: "a") == .paused(until: Date(timeIntervalSince1970: 10_090)))
        throttle.recordQuotaExceeded(project: "a", after: .seconds(1))
        #expect(throttle.status(project: "a") == .paused(until: Date(timeIntervalSince1970: 10_090)))

        clock.advance(by: 90)
        #expect(throttle.status(project: "a") == .recovering(rate: 10))
        #expect(throttle.decide(project: "a") == .go)
        // 10 per second: the next slots are 0.1 s apart.
        #expect(throttle.decide(project: "a") == .reserved(at: Date(timeIntervalSince1970: 10_090.1)))
        #expect(throttle.decide(project: "a") == .reserved(at: Date(timeIntervalSince1970: 10_090.2)))
        clock.advance(by: 2)
        #expect(throttle.status(project: "a") == .recovering(rate: 20))
        clock.advance(by: 2)
        #expect(throttle.status(project: "a") == .recovering(rate: 40))
        clock.advance(by: 2)
        #expect(throttle.status(project: "a") == .open)
        #expect(
            throttle.recordQuotaExceeded(project: "a", after: .seconds(60))
                && throttle.status(project: "a") == .paused(until: Date(timeIntervalSince1970: 10_156)), "a refusal after the pause begins another")
        clock.advance(by: 60 + 6)
        #expect(throttle.status(project: "a") == .open)
        #expect(throttle.decide(project: "a") == .go)
        #expect(throttle.decide(project: "a") == .go)
    }

    @Test("acquire waits while paused, is released by the clock, and ends on cancellation")
    func acquireWaits() async throws {
        let clock = ManualClock()
        let throttle = FCMProjectThrottle(configuration: .init(recheckInterval: .milliseconds(10)), now: clock.now)
        throttle.recordQuotaExceeded(project: "a", after: .seconds(60))
        let waiting = Task { try await throttle.acquire(project: "a") }
        try await Task.sleep(for: .milliseconds(100))
        try await throttle.acquire(project: "b")
        clock.advance(by: 61)
        try await waiting.value

        throttle.recordQuotaExceeded(project: "c", after: .seconds(60))
        let cancelled = Task { () -> FCMClientError.Code? in
            do throws(FCMClientError) {
                try await throttle.acquire(project: "c")
                return nil
            } catch {
                return error.code
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        cancelled.cancel()
        #expect(await cancelled.value == .cancelled)
    }
}
