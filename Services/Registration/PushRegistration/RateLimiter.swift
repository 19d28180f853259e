import PushWire
import Synchronization

/// Token buckets per key (an integration key, a client address): `rate` requests per second
/// with bursts up to `burst`. Buckets idle for a minute are forgotten.
package final class RateLimiter: Sendable {
    package let rate: Double
    package let burst: Double
    private let buckets = Mutex<[String: Bucket]>([:])

    struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    /// `rate` <= 0 disables the limit.
    package init(rate: Double, burst: Double) {
        self.rate = rate
        self.burst = max(burst, 1)
    }

    /// Takes a token for `key`; when none is left, returns how many seconds until one is.
    package func acquire(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard rate > 0 else { return nil }
        return buckets.withLock { buckets in
            if buckets.count > 100_000 {
                buckets = buckets.filter { now - $0.value.updated < .seconds(60) }
            }
            var bucket = buckets[key] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = elapsed.seconds
            bucket.tokens = min(burst, bucket.tokens + seconds * rate)
            bucket.updated = now
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }
}
