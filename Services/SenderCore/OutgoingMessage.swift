import Foundation
import PushEvents
import PushWire

/// A planned message as a sender reads it from its message topic or its retry topic.
package protocol OutgoingMessage: SingleEventDecodable {
    var messageId: UUID { get }
    var broadLogId: Int32? { get }
    var deliveryId: String { get }
    var appId: UUID { get }
    var registrationToken: String { get }
    var validUntil: Date { get }
    var attempt: Int { get set }
    var notBefore: Date? { get set }
    /// The delivery's `throttle.perSecond`; nil: unthrottled.
    var throttlePerSecond: Int? { get }
    /// As in `MessageReference.platform` and `push.broad_log`.
    static var platform: Platform { get }
}

extension OutgoingMessage {
    /// What the results say of the message: the device by its token's digest (one SHA-256).
    package var reference: MessageReference {
        MessageReference(
            messageId: messageId, broadLogId: broadLogId, deliveryId: deliveryId, appId: appId, tokenDigest: TokenDigest.of(registrationToken),
            platform: Self.platform)
    }

    /// The key of the message's records: `<appId>:<token>`, so one device's records share a partition.
    package var recordKey: String { "\(appId.lowercaseText):\(registrationToken)" }
}

extension APNSMessagePlanned: OutgoingMessage {
    package static let platform = Platform.ios
}

extension FCMMessagePlanned: OutgoingMessage {
    package static let platform = Platform.android
}
