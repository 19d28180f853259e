import Foundation

extension Duration {
    /// The duration in (fractional) seconds, for `Date` arithmetic and printing.
    package var seconds: TimeInterval {
        let (seconds, attoseconds) = self.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// A duration of (fractional) seconds, to the nanosecond.
    package static func timeInterval(_ interval: TimeInterval) -> Duration {
        .nanoseconds(Int64((interval * 1e9).rounded()))
    }
}
