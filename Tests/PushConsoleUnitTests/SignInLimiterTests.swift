import PushRuntime
import Testing

@Suite("Sign-in attempts per key (a client address, an operator)")
struct SignInLimiterTests {
    @Test("three wrong tokens lock the address out until the window has passed since the first; other addresses and a success are not held")
    func lockout() {
        let limiter = SignInLimiter(maxFailures: 3, window: .seconds(600))
        let start = ContinuousClock.now
        for minute in 0..<3 {
            #expect(limiter.lockedFor("203.0.113.7", now: start + .seconds(minute * 60)) == nil, "try \(minute + 1) allowed")
            limiter.failed("203.0.113.7", now: start + .seconds(minute * 60))
        }
        #expect(limiter.lockedFor("203.0.113.7", now: start + .seconds(180)) == 420, "locked until 600 s after the first failure")
        #expect(limiter.lockedFor("203.0.113.8", now: start + .seconds(180)) == nil, "another address")
        #expect(limiter.lockedFor("203.0.113.7", now: start + .seconds(599)) == 1)
        #expect(limiter.lockedFor("203.0.113.7", now: start + .seconds(600)) == nil, "the window passed: allowed, the count forgotten")
        limiter.failed("203.0.113.7", now: start + .seconds(601))
        #expect(limiter.lockedFor("203.0.113.7", now: start + .seconds(602)) == nil, "one failure in a new window")

        limiter.failed("198.51.100.1", now: start)
        limiter.failed("198.51.100.1", now: start)
        limiter.succeeded("198.51.100.1")
        limiter.failed("198.51.100.1", now: start)
        #expect(limiter.lockedFor("198.51.100.1", now: start) == nil, "a sign-in that succeeded cleared the count")
    }

    @Test("a limit of 0 never locks")
    func disabled() {
        let limiter = SignInLimiter(maxFailures: 0, window: .seconds(600))
        for _ in 0..<100 { limiter.failed("203.0.113.7") }
        #expect(limiter.lockedFor("203.0.113.7") == nil)
    }
}
