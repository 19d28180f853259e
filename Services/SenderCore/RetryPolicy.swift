import Foundation
import PushWire

/// When a message that failed transiently is tried again: exponential backoff with jitter,
/// never sooner than the provider asked (Retry-After) or a floor (FCM quota: 60 s).
package struct RetryPolicy: Sendable, Hashable {
    package var base: Duration
    package var maximum: Duration

    package init(base: Duration, maximum: Duration) {
        self.base = base
        self.maximum = maximum
    }

    /// The delay after attempt `attempt` (1 = the first send) failed: base × 2^(attempt−1), capped
    /// at `maximum`, of which the upper half is random ("equal jitter": spreads a burst of
    /// failures without ever retrying almost at once); then at least `after` and `atLeast`.
    package func delay(
        afterAttempt attempt: Int, after: Duration? = nil, atLeast: Duration? = nil,
        random: (ClosedRange<Double>) -> Double = { Double.random(in: $0) }
    ) -> Duration {
        let exponent = min(max(attempt - 1, 0), 30)
        let uncapped = base.seconds * pow(2, Double(exponent))
        let ceiling = min(uncapped, maximum.seconds)
        var delay = ceiling / 2 + random(0...1) * ceiling / 2
        if let after { delay = max(delay, after.seconds) }
        if let atLeast { delay = max(delay, atLeast.seconds) }
        return .milliseconds(Int64((delay * 1000).rounded(.up)))
    }
}
