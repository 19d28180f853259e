import Foundation
import PushRuntime
import Testing

@testable import PushSending

@Suite("Sender core: retry delays, offsets, schedule")
struct SenderCoreTests {
    @Test("retry delays double per attempt with jitter in the upper half, capped, never below Retry-After or a floor")
    func retryDelays() {
        let policy = RetryPolicy(base: .seconds(1), maximum: .seconds(60))
        let low = { (_: ClosedRange<Double>) in 0.0 }
        let high = { (_: ClosedRange<Double>) in 1.0 }
        #expect(policy.delay(afterAttempt: 1, random: low) == .milliseconds(500))
        #expect(policy.delay(afterAttempt: 1, random: high) == .seconds(1))
        #expect(policy.delay(afterAttempt: 3, random: high) == .seconds(4))
        #expect(policy.delay(afterAttempt: 3, random: low) == .seconds(2))
        #expect(policy.delay(afterAttempt: 20, random: high) == .seconds(60))
        #expect(policy.delay(afterAttempt: 20, random: low) == .seconds(30))
        #expect(policy.delay(afterAttempt: 1, after: .seconds(7), random: high) == .seconds(7))
        #expect(policy.delay(afterAttempt: 1, atLeast: .seconds(60), random: high) == .seconds(60))
        #expect(policy.delay(afterAttempt: 10, after: .seconds(1), random: high) == .seconds(60))
        for attempt in 1...12 {
            let delay = policy.delay(afterAttempt: attempt)
            let ceiling = min(Double(1 << (attempt - 1)), 60)
            #expect(delay >= .milliseconds(Int64(ceiling * 500)) && delay <= .milliseconds(Int64(ceiling * 1000)))
        }
    }

    @Test(
        "the throttled topic's sender: group <group>.throttled, its own held budget (FCM_SENDER_MAX_HELD_THROTTLED, default 1,000), at most the bulk lane's sends in flight; a bad budget is refused naming the variable"
    )
    func throttledLaneSettings() throws {
        let defaults = SenderSettings(group: "push-fcm-sender", maxInFlight: 200)
        let plain = try SenderSettings(prefix: "FCM_SENDER", defaults: defaults, environment: EnvironmentSettings([:]))
        #expect(plain.throttledLane.lane == .throttled)
        #expect(plain.throttledLane.group == "push-fcm-sender.throttled")
        #expect(plain.throttledLane.maxHeld == 1_000)
        #expect(plain.throttledLane.maxInFlight == 200)
        #expect(plain.maxHeld == 5_000)
        let small = try SenderSettings(
            prefix: "FCM_SENDER", defaults: defaults, environment: EnvironmentSettings(["FCM_SENDER_MAX_HELD_THROTTLED": "100", "FCM_SENDER_GROUP": "g"]))
        #expect(small.throttledLane.maxHeld == 100)
        #expect(small.throttledLane.maxInFlight == 100)
        #expect(small.throttledLane.group == "g.throttled")
        #expect(small.maxHeld == 5_000, "the bulk lane's budget is its own")
        let error = #expect(throws: ConfigurationError.self) {
            try SenderSettings(prefix: "FCM_SENDER", defaults: defaults, environment: EnvironmentSettings(["FCM_SENDER_MAX_HELD_THROTTLED": "0"]))
        }
        #expect(error?.description.contains("FCM_SENDER_MAX_HELD_THROTTLED") == true)
    }

    @Test("an offset is stored only when every earlier record of the partition is finished")
    func contiguousOffsets() {
        var progress = PartitionProgress()
        for offset in Int64(10)...14 { progress.begin(offset) }
        #expect(progress.held == 5)
        #expect(progress.finish(12) == nil)
        #expect(progress.finish(11) == nil)
        #expect(progress.finishedBehindUnfinished == 2)
        #expect(progress.finish(10) == 13)
        #expect(progress.finish(14) == nil)
        #expect(progress.finish(13) == 15)
        #expect(progress.held == 0)
        #expect(progress.finishedBehindUnfinished == 0)

        // An abandoned record (its outcome could not be stored) is never passed.
        progress.begin(15)
        progress.begin(16)
        progress.abandon()
        #expect(progress.finish(16) == nil)
        #expect(progress.held == 0)
    }

    @Test("offsets stay right over many records finished in random order")
    func randomOrder() {
        var progress = PartitionProgress()
        let offsets = Array(Int64(0)..<5_000)
        for offset in offsets { progress.begin(offset) }
        var stored: Int64 = 0
        var finished = Set<Int64>()
        for offset in offsets.shuffled() {
            finished.insert(offset)
            if let next = progress.finish(offset) {
                #expect(next > stored)
                stored = next
                #expect((0..<next).allSatisfy { finished.contains($0) })
            }
        }
        #expect(stored == 5_000)
    }

    @Test("the schedule gives back due records earliest first and hands back a partition's records")
    func schedule() {
        var schedule = RetrySchedule<Int>()
        let start = Date(timeIntervalSince1970: 1_000)
        for (item, seconds) in [(1, 5.0), (2, 1.0), (3, 3.0), (4, 2.0), (5, 9.0)] {
            schedule.insert(item, due: start.addingTimeInterval(seconds))
        }
        #expect(schedule.popDue(start) == [])
        #expect(schedule.popDue(start.addingTimeInterval(3)) == [2, 4, 3])
        #expect(schedule.removeAll { $0 == 5 } == [5])
        #expect(schedule.count == 1)
        #expect(schedule.popDue(start.addingTimeInterval(100)) == [1])
    }

    @Test("a suspended credential stays suspended until its time, then is forgotten")
    func suspensions() {
        let suspensions = CredentialSuspensions()
        let now = Date(timeIntervalSince1970: 1_000)
        suspensions.suspend("sha256:a", until: now.addingTimeInterval(60))
        #expect(suspensions.suspendedUntil("sha256:a", now: now) == now.addingTimeInterval(60))
        #expect(suspensions.suspendedUntil("sha256:b", now: now) == nil)
        #expect(suspensions.suspendedUntil("sha256:a", now: now.addingTimeInterval(61)) == nil)
    }

    @Test("the semaphore bounds holders and wakes a waiter on release")
    func semaphore() async throws {
        let semaphore = AsyncSemaphore(permits: 2)
        #expect(semaphore.tryAcquire())
        try await semaphore.acquire()
        #expect(!semaphore.tryAcquire())
        async let waited: Void = semaphore.acquire()
        try await Task.sleep(for: .milliseconds(20))
        semaphore.release()
        try await waited
        #expect(!semaphore.tryAcquire())
    }
}

@Suite("FCM message ttl")
struct FCMTTLTests {
    @Test("android.ttl is rewritten to the time left, and a data value named ttl is left alone")
    func ttl() {
        let planned = #"{"token":"t","data":{"_mId":"m","ttl":"\"ttl\":\"9s\""},"android":{"priority":"high","ttl":"86400s","collapse_key":"k"}}"#
        func sent(_ message: String, _ seconds: Int) -> String { String(decoding: FCMTransport.withTTL(message, seconds: seconds), as: UTF8.self) }
        #expect(
            sent(planned, 120) == #"{"token":"t","data":{"_mId":"m","ttl":"\"ttl\":\"9s\""},"android":{"priority":"high","ttl":"120s","collapse_key":"k"}}"#)
        #expect(sent(#"{"token":"t"}"#, 5) == #"{"token":"t"}"#)
        // Multi-byte characters before and after: the rewrite is by bytes, not characters.
        let accents = #"{"token":"t","notification":{"title":"Olá 👋 ça va"},"android":{"ttl":"86400s","notification":{"body":"é"}}}"#
        #expect(sent(accents, 7) == #"{"token":"t","notification":{"title":"Olá 👋 ça va"},"android":{"ttl":"7s","notification":{"body":"é"}}}"#)
        // No ttl in android, or an unterminated one: the message goes as planned.
        #expect(sent(#"{"token":"t","android":{"priority":"high"}}"#, 7) == #"{"token":"t","android":{"priority":"high"}}"#)
        #expect(sent(#"{"android":{"ttl":"12"#, 7) == #"{"android":{"ttl":"12"#)
        // A ttl before "android" (in data) is not android's.
        #expect(sent(#"{"data":{"a":"\"ttl\":\"1s\""},"android":{"ttl":"5s"}}"#, 3) == #"{"data":{"a":"\"ttl\":\"1s\""},"android":{"ttl":"3s"}}"#)
    }
}

@Suite("Sender core: the in-flight semaphore")
struct SenderWaitTests {
    @Test("AsyncSemaphore: close() ends a waiting acquire and later ones with Closed; acquire(n) waits for n releases")
    func semaphoreClose() async throws {
        let semaphore = AsyncSemaphore(permits: 2)
        try await semaphore.acquire(2)
        let waiting = Task { try await semaphore.acquire() }
        try await Task.sleep(for: .milliseconds(100))
        semaphore.close()
        await #expect(throws: AsyncSemaphore.Closed.self) { try await waiting.value }
        await #expect(throws: AsyncSemaphore.Closed.self) { try await semaphore.acquire() }

        let drained = AsyncSemaphore(permits: 3)
        try await drained.acquire(3)
        async let all: Void = drained.acquire(3)
        for _ in 0..<3 {
            try await Task.sleep(for: .milliseconds(20))
            drained.release()
        }
        try await all
        #expect(!drained.tryAcquire(), "acquire(3) took the three released permits")
    }
}
