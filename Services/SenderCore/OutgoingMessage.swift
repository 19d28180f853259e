import Foundation
import PushEvents
import PushWire

/// A planned message as a sender reads it from its message topic or its retry topic.
package protocol OutgoingMessage: SingleEventDecodable, SealableMessage {
    var messageId: UUID { get }
    var broadLogId: Int32? { get }
    var deliveryId: String { get }
    var appId: UUID { get }
    var validUntil: Date { get }
    /// When the planner wrote it (`push_sender_planned_to_final_seconds` counts from here).
    var plannedAt: Date { get }
    var attempt: Int { get set }
    var notBefore: Date? { get set }
    /// The delivery's `throttle.perSecond`; nil: unthrottled.
    var throttlePerSecond: Int? { get }
    /// The language texts it carries (`MessageReference.language`).
    var language: String? { get }
    /// The A/B variant it carries (`MessageReference.variant`).
    var variant: String? { get }
    /// As in `MessageReference.platform` and `push.broad_log`.
    static var platform: Platform { get }
}

extension OutgoingMessage {
    /// What the results say of the message: the device by its token's digest (the sealing's, or
    /// one SHA-256 of a token in clear).
    package var reference: MessageReference {
        MessageReference(
            messageId: messageId, broadLogId: broadLogId, deliveryId: deliveryId, appId: appId, tokenDigest: tokenDigest,
            platform: Self.platform, plannedAt: plannedAt, language: language, variant: variant)
    }

    /// The key of the message's records: `<appId>:<tokenDigest>` (`<appId>:<token>` for an
    /// unsealed record, as version 1 had it), so one device's records share a partition.
    package var recordKey: String { "\(appId.lowercaseText):\(sealing?.tokenDigest ?? registrationToken)" }
}

extension APNSMessagePlanned: OutgoingMessage {
    package static let platform = Platform.ios
}

extension FCMMessagePlanned: OutgoingMessage {
    package static let platform = Platform.android
}
