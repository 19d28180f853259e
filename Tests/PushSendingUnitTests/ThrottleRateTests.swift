import Foundation
import Kafka
import PushEvents
import Testing

@testable import PushSending

@Suite("Throttle slots: the arithmetic that keeps a delivery under its rate at the provider")
struct ThrottleRateTests {
    @Test(
        "slots are 1 / (0.85 × perSecond) apart, rounded up; a batch is a tenth of a second of them, at least one",
        arguments: [
            (1, Int64(1_176_471), 1), (9, 130_719, 1), (20, 58_824, 1), (50, 23_530, 4), (1_000, 1_177, 84), (100_000, 12, 8_333),
        ])
    func intervalAndBatch(_ perSecond: Int, _ interval: Int64, _ batch: Int) {
        let rate = ThrottleRate(perSecond: perSecond)
        #expect(rate.intervalMicroseconds == interval)
        #expect(rate.batchSize == batch)
    }

    @Test("the planner's pace is whole messages a second the timeline sustains: never above it, except the floor of 1 for a rate of 1")
    func sustained() {
        #expect(ThrottleRate(perSecond: 1).sustainedPerSecond == 1)
        #expect(ThrottleRate(perSecond: 40).sustainedPerSecond == 33)
        #expect(ThrottleRate(perSecond: 1_000).sustainedPerSecond == 849)
        for perSecond in 2...100_000 {
            let rate = ThrottleRate(perSecond: perSecond)
            let timeline = 1_000_000 / Double(rate.intervalMicroseconds)
            guard Double(rate.sustainedPerSecond) <= timeline else {
                Issue.record("\(perSecond)/s: the planner at \(rate.sustainedPerSecond)/s, the timeline at \(timeline)/s")
                return
            }
        }
    }

    @Test("for every rate from 1 to 100,000 a second, the slots a one-second window can send (slots up to `lateness` late) are at most the rate")
    func windowBound() {
        let window = Int64((1 + ThrottleRate.lateness) * 1_000_000)
        for perSecond in 1...100_000 {
            let interval = ThrottleRate(perSecond: perSecond).intervalMicroseconds
            // Evenly spaced slots in a half-open window of `window` µs: at most ⌈window / interval⌉.
            let most = (window + interval - 1) / interval
            guard most <= perSecond else {
                Issue.record("\(perSecond)/s: \(most) slots in a window of \(window) µs")
                return
            }
        }
    }

    @Test("a batch hands out its slots in order, each once, and nil when spent")
    func batchInOrder() {
        let start = Date(timeIntervalSince1970: 1_000)
        var batch = SlotBatch(first: start.addingTimeInterval(1), interval: 0.1, count: 3)
        let slots = (0..<4).map { _ in batch.take(now: start) }
        #expect(slots[3] == nil)
        let offsets = slots.compactMap { $0?.timeIntervalSince(start) }
        #expect(offsets.count == 3)
        for (offset, expected) in zip(offsets, [1.0, 1.1, 1.2]) { #expect(abs(offset - expected) < 1e-6) }
        #expect(batch.remaining == 0)
    }

    @Test("slots more than `lateness` past are dropped, never handed out late; a slot just within it is still used")
    func staleSlotsDropped() throws {
        let first = Date(timeIntervalSince1970: 2_000)
        var batch = SlotBatch(first: first, interval: 0.1, count: 10)
        // 0.35 s after the first slot: slots at 0, 0.1, 0.2, 0.3 are more than 25 ms past.
        let now = first.addingTimeInterval(0.35)
        let taken = batch.take(now: now)
        let slot = try #require(taken)
        #expect(slot >= now.addingTimeInterval(-ThrottleRate.lateness))
        #expect(abs(slot.timeIntervalSince(first) - 0.4) < 1e-6)
        #expect(batch.remaining == 5)
        var withinLateness = SlotBatch(first: first, interval: 0.1, count: 2)
        #expect(withinLateness.take(now: first.addingTimeInterval(0.02)) == first)
        var spent = SlotBatch(first: first, interval: 0.1, count: 2)
        #expect(spent.take(now: first.addingTimeInterval(5)) == nil, "every slot stale")
        #expect(spent.remaining == 0)
    }

    @Test("a slot come is sent, one within a second waits in memory, one further away is set aside on the retry topic")
    func decisions() {
        let now = Date(timeIntervalSince1970: 3_000)
        #expect(ThrottleRate.decision(slot: now, now: now) == .sendNow)
        #expect(ThrottleRate.decision(slot: now.addingTimeInterval(-0.01), now: now) == .sendNow)
        #expect(ThrottleRate.decision(slot: now.addingTimeInterval(0.5), now: now) == .wait(until: now.addingTimeInterval(0.5)))
        #expect(ThrottleRate.decision(slot: now.addingTimeInterval(1), now: now) == .wait(until: now.addingTimeInterval(1)))
        #expect(ThrottleRate.decision(slot: now.addingTimeInterval(1.01), now: now) == .deferUntil(now.addingTimeInterval(1.01)))
        #expect(ThrottleRate.usable(now.addingTimeInterval(-0.02), now: now))
        #expect(!ThrottleRate.usable(now.addingTimeInterval(-0.03), now: now))
    }

    @Test("the slot header: milliseconds since the epoch, rounded up (never early), read back; absent or garbled reads as none")
    func header() {
        let slot = Date(timeIntervalSince1970: 1_764_000_000.1234)
        let header = ThrottleHeader.header(slot)
        #expect(header.stringValue == "1764000000124")
        let read = ThrottleHeader.slot(in: [KafkaHeader(name: "push-delivery-id", string: "d"), header])
        #expect(read == Date(timeIntervalSince1970: 1_764_000_000.124))
        #expect(ThrottleHeader.slot(in: []) == nil)
        #expect(ThrottleHeader.slot(in: [KafkaHeader(name: ThrottleHeader.name, string: "soon")]) == nil)
    }

    @Test("the clock difference used is the smallest of the last 32 answers: a slow answer does not shift a batch, a clock stepped ahead is followed within 32")
    func clockOffsets() {
        var offsets = ThrottleSlots.ClockOffsets()
        #expect(!offsets.primed)
        // The first readings, one of them delayed by the host's scheduling: the quickest is used.
        offsets.prime([0.150, 0.003, 0.090, 0.004, 0.120])
        #expect(offsets.applied == 0.003)
        // A round trip 10 ms slower than the quickest: the batch is placed as the quickest saw it.
        #expect(offsets.record(0.013) == 0.003)
        // The host's clock stepped 2 s ahead: once the old answers left the window, it is used.
        var used: [TimeInterval] = []
        for _ in 0..<ThrottleSlots.ClockOffsets.capacity { used.append(offsets.record(2.003)) }
        #expect(used.first == 0.003)
        #expect(used.last == 2.003)
        // Stepped back by more than a second: followed at once.
        #expect(offsets.record(0.002) == 0.002)
    }

    @Test("an offset that came down (every first reading was slow) comes down at most 2 ms a batch, so no batch is placed on top of the one before it")
    func clockOffsetComesDownSlowly() {
        var offsets = ThrottleSlots.ClockOffsets()
        // A process that started on a busy host: each of its first readings came 150 ms late.
        offsets.prime([0.151, 0.150, 0.152, 0.150, 0.153])
        #expect(offsets.applied == 0.150)
        var used = [0.150]
        for _ in 0..<100 { used.append(offsets.record(0.001)) }
        let steps = zip(used, used.dropFirst()).map { $0 - $1 }
        #expect(steps.allSatisfy { $0 >= 0 && $0 <= ThrottleSlots.ClockOffsets.maxStep + 1e-12 })
        // Where the quick answers put it, after 75 batches (7.5 s of one delivery's slots at most).
        #expect(abs(used[75] - 0.001) < 1e-9)
        #expect(abs(used.last! - 0.001) < 1e-9)
    }
}
