import Foundation
import PushEvents
import PushWire

/// A planned message as a sender reads it from its message topic or its retry topic.
public protocol OutgoingMessage: SingleEventDecodable {
    var messageId: UUID { get }
    var deliveryId: String { get }
    var appId: UUID { get }
    var registrationToken: String { get }
    var validUntil: Date { get }
    var attempt: Int { get set }
    var notBefore: Date? { get set }
    /// `ios` or `android`, as in `MessageReference.platform` and `push.broad_log`.
    static var platform: String { get }
}

extension OutgoingMessage {
    public var reference: MessageReference {
        MessageReference(messageId: messageId, deliveryId: deliveryId, appId: appId, registrationToken: registrationToken, platform: Self.platform)
    }

    /// The key of the message's records: `<appId>:<token>`, so one device's records share a partition.
    public var recordKey: String { "\(appId.lowercaseText):\(registrationToken)" }
}

extension APNSMessagePlanned: OutgoingMessage {
    public static let platform = "ios"
}

extension FCMMessagePlanned: OutgoingMessage {
    public static let platform = "android"
}
