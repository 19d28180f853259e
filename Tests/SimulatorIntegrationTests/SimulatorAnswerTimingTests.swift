import NIOCore
import ProviderSimulatorCore
import Testing

@Suite("When a simulator's delayed answers are due")
struct SimulatorAnswerTimingTests {
    static let millisecond: UInt64 = 1_000_000

    @Test("an answer is due no sooner than its latency and less than a millisecond later", arguments: [1, 30, 100])
    func neverEarly(latency: Int) {
        for offset: UInt64 in [0, 1, 999_999, 1_000_000, 1_000_001, 123_456_789] {
            let now = NIODeadline.uptimeNanoseconds(5_000_000_000 + offset)
            let due = AnswerTiming.deadline(afterMilliseconds: latency, now: now).uptimeNanoseconds
            let earliest = now.uptimeNanoseconds + UInt64(latency) * Self.millisecond
            #expect(due >= earliest)
            #expect(due < earliest + Self.millisecond)
            #expect(due % Self.millisecond == 0)
        }
    }

    @Test("requests that arrive within the same millisecond are answered together")
    func sameMillisecondSameDeadline() {
        let first = AnswerTiming.deadline(afterMilliseconds: 30, now: .uptimeNanoseconds(7_000_000_001))
        let last = AnswerTiming.deadline(afterMilliseconds: 30, now: .uptimeNanoseconds(7_000_999_999))
        #expect(first == last)
        let next = AnswerTiming.deadline(afterMilliseconds: 30, now: .uptimeNanoseconds(7_001_000_001))
        #expect(next.uptimeNanoseconds - first.uptimeNanoseconds == Self.millisecond)
    }
}
