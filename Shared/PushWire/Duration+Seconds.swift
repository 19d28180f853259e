import Foundation

extension Duration {
    /// The duration in (fractional) seconds, for `Date` arithmetic and printing.
    package var seconds: TimeInterval {
        let (seconds, attoseconds) = self.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// Whole milliseconds (rounded down), clamped to `Int32`: librdkafka's timeout arguments.
    package var clampedMilliseconds: Int32 {
        let (seconds, attoseconds) = self.components
        return Int32(clamping: seconds.multipliedReportingOverflow(by: 1000).overflow ? Int64.max : seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// A duration of (fractional) seconds, to the nanosecond.
    package static func timeInterval(_ interval: TimeInterval) -> Duration {
        .nanoseconds(Int64((interval * 1e9).rounded()))
    }
}
