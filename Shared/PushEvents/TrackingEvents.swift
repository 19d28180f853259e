import Foundation

/// A device called the tracking URL (`GET /r/?id=…`): `push.tracking`, key = `messageId`.
///
/// One event per hit: a device that calls twice makes two events (distinct counts are the
/// indicators' business). `trackingId` is also the envelope's `id`, so a consumer can recognise
/// a re-delivered record by either. Nothing about the caller (address, user agent) is kept.
package struct TrackingHitRecorded: PushEvent, Hashable {
    package static let eventType = "TrackingHitRecorded"
    package static let eventVersion = 1

    /// Unique per hit, generated when the hit is accepted.
    package var trackingId: UUID
    /// A UUID in lowercase, or a decimal broadLog id such as `-673096100`.
    package var messageId: String
    /// `uuid` or `decimal`: how the SDK wrote `messageId`.
    package var messageIdForm: String
    /// The payload's `_dId`, verbatim.
    package var deliveryId: String
    /// As sent: 1 = received, 2 = opened, anything else is `other`.
    package var tagId: Int32
    /// `received`, `opened` or `other`.
    package var kind: String
    /// When the service accepted the hit.
    package var occurredAt: Date

    package init(trackingId: UUID, messageId: String, messageIdForm: String, deliveryId: String, tagId: Int32, kind: String, occurredAt: Date) {
        self.trackingId = trackingId
        self.messageId = messageId
        self.messageIdForm = messageIdForm
        self.deliveryId = deliveryId
        self.tagId = tagId
        self.kind = kind
        self.occurredAt = occurredAt
    }
}
