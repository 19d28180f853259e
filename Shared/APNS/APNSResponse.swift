import Foundation

/// What APNs answered to one request.
public struct APNSResponse: Sendable, Equatable {
    /// HTTP status.
    public var status: Int
    /// The `apns-id` header APNs echoed.
    public var apnsId: String?
    /// The body's `reason`; nil on 200.
    public var reason: APNSReason?
    /// The body's `timestamp` (410 only): when APNs last confirmed the token invalid.
    public var timestamp: Date?
    /// `Retry-After` (seconds or HTTP date), when APNs sent one.
    public var retryAfter: Duration?

    public init(status: Int, apnsId: String? = nil, reason: APNSReason? = nil, timestamp: Date? = nil, retryAfter: Duration? = nil) {
        self.status = status
        self.apnsId = apnsId
        self.reason = reason
        self.timestamp = timestamp
        self.retryAfter = retryAfter
    }
}
