import Foundation
import Synchronization

/// A wall clock that stands still until the test moves it: a client's or throttle's injected `now`.
package final class ManualClock: Sendable {
    private let current: Mutex<Date>

    package init(_ start: Date = Date()) {
        self.current = Mutex(start)
    }

    package var now: @Sendable () -> Date {
        { self.current.withLock { $0 } }
    }

    package func advance(by seconds: TimeInterval) {
        self.current.withLock { $0.addTimeInterval(seconds) }
    }
}
