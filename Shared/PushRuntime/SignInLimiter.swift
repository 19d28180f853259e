import Synchronization

/// Failed sign-ins per key: a client address at the console's form (wrong admin tokens or
/// passwords), an operator at `POST /admin/v1/sessions` (wrong passwords). After `maxFailures`
/// of them within `window`, the key is locked out until `window` has passed since its first
/// counted failure; a sign-in that succeeds clears its count. A locked-out key is refused before
/// its secret is looked at, so parallel guesses get `maxFailures` tries per window, not one per
/// second each. In memory: the counts are per replica.
package final class SignInLimiter: Sendable {
    package let maxFailures: Int
    package let window: Duration
    private let failures = Mutex<[String: Failures]>([:])

    struct Failures {
        var count: Int
        var since: ContinuousClock.Instant
    }

    /// `maxFailures` 0 disables the limit.
    package init(maxFailures: Int, window: Duration) {
        self.maxFailures = maxFailures
        self.window = window
    }

    /// Whole seconds until `key` may try again; nil when it may now.
    package func lockedFor(_ key: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard maxFailures > 0 else { return nil }
        return failures.withLock { failures in
            guard let entry = failures[key] else { return nil }
            let left = entry.since + window - now
            if left <= .zero {
                failures[key] = nil
                return nil
            }
            return entry.count >= maxFailures ? max(1, Int(left.components.seconds) + (left.components.attoseconds > 0 ? 1 : 0)) : nil
        }
    }

    /// Counts a wrong token from `key`.
    package func failed(_ key: String, now: ContinuousClock.Instant = .now) {
        guard maxFailures > 0 else { return }
        failures.withLock { failures in
            if failures.count > 10_000 { failures = failures.filter { now - $0.value.since < window } }
            var entry = failures[key] ?? Failures(count: 0, since: now)
            if now - entry.since >= window { entry = Failures(count: 0, since: now) }
            entry.count += 1
            failures[key] = entry
        }
    }

    /// A sign-in from `key` succeeded: its failures are forgotten.
    package func succeeded(_ key: String) {
        _ = failures.withLock { $0.removeValue(forKey: key) }
    }
}
