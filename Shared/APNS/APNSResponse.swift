import Foundation

/// What APNs answered to one request.
package struct APNSResponse: Sendable, Equatable {
    /// HTTP status.
    package var status: Int
    /// The `apns-id` header APNs echoed.
    package var apnsId: String?
    /// The body's `reason`; nil on 200.
    package var reason: APNSReason?
    /// The body's `timestamp` (410 only): when APNs last confirmed the token invalid.
    package var timestamp: Date?
    /// `Retry-After` (seconds or HTTP date), when APNs sent one.
    package var retryAfter: Duration?

    package init(status: Int, apnsId: String? = nil, reason: APNSReason? = nil, timestamp: Date? = nil, retryAfter: Duration? = nil) {
        self.status = status
        self.apnsId = apnsId
        self.reason = reason
        self.timestamp = timestamp
        self.retryAfter = retryAfter
    }
}
