import Foundation
import Synchronization

/// The wall clock plus an offset the test moves forward: a client's or sender's injected `now`
/// when real time must keep running too (timeouts, the broker). `ManualClock` stands still instead.
package final class ShiftedClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    package init(offset: Duration = .zero) {
        self.advance(by: offset)
    }

    package var now: @Sendable () -> Date {
        { Date().addingTimeInterval(self.offset.withLock { $0 }) }
    }

    package func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }

    package func advance(by duration: Duration) {
        let (seconds, attoseconds) = duration.components
        advance(by: Double(seconds) + Double(attoseconds) / 1e18)
    }
}
