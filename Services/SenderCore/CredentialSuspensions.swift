import Foundation
import Synchronization

/// Credentials a provider refused, and until when they are left alone. The sender suspends a
/// credential after a `credentialRejected` outcome; the transport looks here before sending and
/// defers messages of a suspended credential, so one bad key fails one message per cool-down
/// instead of the whole queue. A rotated credential has another key and is not suspended.
package final class CredentialSuspensions: Sendable {
    private let until = Mutex<[String: Date]>([:])

    package init() {}

    package func suspend(_ credential: String, until date: Date) {
        until.withLock { $0[credential] = max($0[credential] ?? date, date) }
    }

    /// True when no credential is suspended (checked before making the keys of a lookup).
    package var isEmpty: Bool { until.withLock { $0.isEmpty } }

    /// When the suspension of `credential` ends, if it is suspended at `now`.
    package func suspendedUntil(_ credential: String, now: Date) -> Date? {
        until.withLock { suspensions in
            guard let end = suspensions[credential] else { return nil }
            if end <= now {
                suspensions[credential] = nil
                return nil
            }
            return end
        }
    }
}
