import Foundation
import NIOCore

/// One notification for one device, with the APNs headers it is sent with.
package struct APNSRequest: Sendable {
    /// Hex device token (the path component of `/3/device/<token>`).
    package var deviceToken: String
    /// `apns-topic`: the bundle id, with the suffix the push type needs (`.voip`, ...).
    package var topic: String
    /// `apns-push-type`: `alert`, `background`, `voip`, ...
    package var pushType: String
    /// `apns-priority`: 10, 5 or 1.
    package var priority: Int
    /// `apns-expiration` in epoch seconds; nil omits the header (APNs then stores per its default).
    package var expiration: Date?
    /// `apns-collapse-id` (at most 64 bytes).
    package var collapseId: String?
    /// `apns-id`, sent lowercase; APNs echoes it.
    package var apnsId: UUID
    /// The JSON payload, sent as is (the request's body, without a further copy).
    package var payload: ByteBuffer
    /// Asked just before the request is written (after any wait for a stream); false withdraws
    /// it: the send fails `.withdrawn` without reaching APNs. Nil: always sent.
    package var stillWanted: (@Sendable () -> Bool)?

    package init(
        deviceToken: String,
        topic: String,
        pushType: String = "alert",
        priority: Int = 10,
        expiration: Date? = nil,
        collapseId: String? = nil,
        apnsId: UUID = UUID(),
        payload: ByteBuffer,
        stillWanted: (@Sendable () -> Bool)? = nil
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseId = collapseId
        self.apnsId = apnsId
        self.payload = payload
        self.stillWanted = stillWanted
    }
}
