import Foundation

extension Duration {
    /// The duration in (fractional) seconds, for `Date` arithmetic.
    var seconds: TimeInterval {
        let (seconds, attoseconds) = self.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }

    /// A duration of (fractional) seconds.
    static func timeInterval(_ interval: TimeInterval) -> Duration {
        .nanoseconds(Int64((interval * 1e9).rounded()))
    }
}
