import PushRuntime
import Testing

@Suite("Wakeup: waiting without polling")
struct WakeupTests {
    @Test("a Wakeup ends a wait on a signal (given before or during it), on its timeout, or never without one")
    func wakeup() async throws {
        let wakeup = Wakeup()
        wakeup.signal()
        wakeup.signal()  // several signals count as one
        let clock = ContinuousClock()
        #expect(await clock.measure { await wakeup.wait(atMost: .seconds(30)) } < .seconds(1), "a signal given before the wait ends it at once")
        let timedOut = await clock.measure { await wakeup.wait(atMost: .milliseconds(200)) }
        #expect(timedOut >= .milliseconds(200) && timedOut < .seconds(5), "the second signal was not kept: the wait ran to its timeout")

        async let waited = clock.measure { await wakeup.wait(atMost: nil) }
        try await Task.sleep(for: .milliseconds(100))
        wakeup.signal()
        #expect(await waited < .seconds(5), "a signal during a wait without timeout ends it")
    }
}
