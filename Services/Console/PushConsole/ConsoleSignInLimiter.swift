import Synchronization

/// Wrong admin tokens typed at the sign-in form, per client address: after `maxFailures` of
/// them within `window`, the address is locked out until `window` has passed since its first
/// counted failure; a sign-in that succeeds clears its count. A locked-out address is refused
/// before its token is looked at, so parallel guesses from one address get `maxFailures` tries
/// per window, not one per second each.
package final class ConsoleSignInLimiter: Sendable {
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

    /// Whole seconds until `address` may try again; nil when it may now.
    package func lockedFor(_ address: String, now: ContinuousClock.Instant = .now) -> Int? {
        guard maxFailures > 0 else { return nil }
        return failures.withLock { failures in
            guard let entry = failures[address] else { return nil }
            let left = entry.since + window - now
            if left <= .zero {
                failures[address] = nil
                return nil
            }
            return entry.count >= maxFailures ? max(1, Int(left.components.seconds) + (left.components.attoseconds > 0 ? 1 : 0)) : nil
        }
    }

    /// Counts a wrong token from `address`.
    package func failed(_ address: String, now: ContinuousClock.Instant = .now) {
        guard maxFailures > 0 else { return }
        failures.withLock { failures in
            if failures.count > 10_000 { failures = failures.filter { now - $0.value.since < window } }
            var entry = failures[address] ?? Failures(count: 0, since: now)
            if now - entry.since >= window { entry = Failures(count: 0, since: now) }
            entry.count += 1
            failures[address] = entry
        }
    }

    /// A sign-in from `address` succeeded: its failures are forgotten.
    package func succeeded(_ address: String) {
        _ = failures.withLock { $0.removeValue(forKey: address) }
    }
}
