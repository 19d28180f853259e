import Foundation

/// Which stored provider credential a message is sent with: the sender looks the secret up by
/// `credentialId` (`push.app_credentials`); events never carry the secret.
public struct CredentialReference: Codable, Sendable, Hashable {
    public var credentialId: UUID
    /// `apns-token`, `apns-certificate` or `fcm-service-account`.
    public var kind: String
    public var fingerprint: String

    public init(credentialId: UUID, kind: String, fingerprint: String) {
        self.credentialId = credentialId
        self.kind = kind
        self.fingerprint = fingerprint
    }
}

/// One notification for one iOS device: `push.apns.messages`, key = `<appId>:<token>` (one
/// device's messages stay in order on one partition). Everything the APNs sender needs.
public struct APNSMessagePlanned: PushEvent, Hashable {
    public static let eventType = "APNSMessagePlanned"
    public static let eventVersion = 1

    /// `_mId` in the payload; also the `apns-id` header.
    public var messageId: UUID
    public var deliveryId: String
    public var appId: UUID
    public var registrationToken: String
    /// `sandbox` or `production`: which APNs host.
    public var environment: String
    /// nil when the app had no credential at planning time; the sender then looks up the app's
    /// current credential (and fails the message as a configuration error if there is none).
    public var credential: CredentialReference?
    /// `apns-topic` (the bundle id).
    public var topic: String
    /// `apns-push-type`: `alert` or `background`.
    public var pushType: String
    /// `apns-priority`: 10, or 5 for a background (silent) push.
    public var priority: Int
    /// `apns-collapse-id`.
    public var collapseId: String?
    /// The JSON payload exactly as it is to be sent (`aps`, `_mId`, `_dId`, variables).
    public var payload: String
    /// `apns-expiration`; nothing is sent or retried after it.
    public var validUntil: Date
    /// 1 for the first attempt; a sender's retry republishes with attempt + 1.
    public var attempt: Int
    public var plannedAt: Date
    /// Set on retry records (`push.apns.retries`): not to be sent before this time. Absent on
    /// the planner's records.
    public var notBefore: Date?

    public init(
        messageId: UUID, deliveryId: String, appId: UUID, registrationToken: String, environment: String,
        credential: CredentialReference?, topic: String, pushType: String, priority: Int, collapseId: String?,
        payload: String, validUntil: Date, attempt: Int, plannedAt: Date, notBefore: Date? = nil
    ) {
        self.messageId = messageId
        self.deliveryId = deliveryId
        self.appId = appId
        self.registrationToken = registrationToken
        self.environment = environment
        self.credential = credential
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.collapseId = collapseId
        self.payload = payload
        self.validUntil = validUntil
        self.attempt = attempt
        self.plannedAt = plannedAt
        self.notBefore = notBefore
    }
}

/// One message for one Android device: `push.fcm.messages`, key = `<appId>:<token>`.
public struct FCMMessagePlanned: PushEvent, Hashable {
    public static let eventType = "FCMMessagePlanned"
    public static let eventVersion = 1

    /// `_mId` in the data.
    public var messageId: UUID
    public var deliveryId: String
    public var appId: UUID
    public var registrationToken: String
    /// The Firebase project of `POST /v1/projects/{projectId}/messages:send`.
    public var projectId: String
    public var credential: CredentialReference?
    /// The HTTP v1 `message` object as JSON text (token, data or notification, android). Its
    /// `android.ttl` is the time left at planning; the sender recomputes it from `validUntil`.
    public var message: String
    public var validUntil: Date
    public var attempt: Int
    public var plannedAt: Date
    /// Set on retry records (`push.fcm.retries`): not to be sent before this time.
    public var notBefore: Date?

    public init(
        messageId: UUID, deliveryId: String, appId: UUID, registrationToken: String, projectId: String,
        credential: CredentialReference?, message: String, validUntil: Date, attempt: Int, plannedAt: Date, notBefore: Date? = nil
    ) {
        self.messageId = messageId
        self.deliveryId = deliveryId
        self.appId = appId
        self.registrationToken = registrationToken
        self.projectId = projectId
        self.credential = credential
        self.message = message
        self.validUntil = validUntil
        self.attempt = attempt
        self.plannedAt = plannedAt
        self.notBefore = notBefore
    }
}

/// What every message result says about the message it concerns.
public struct MessageReference: Codable, Sendable, Hashable {
    public var messageId: UUID
    public var deliveryId: String
    public var appId: UUID
    public var registrationToken: String
    /// `ios` or `android`.
    public var platform: String

    public init(messageId: UUID, deliveryId: String, appId: UUID, registrationToken: String, platform: String) {
        self.messageId = messageId
        self.deliveryId = deliveryId
        self.appId = appId
        self.registrationToken = registrationToken
        self.platform = platform
    }
}

/// The provider accepted the message: `push.message-results`, key = messageId.
public struct MessageSent: PushEvent, Hashable {
    public static let eventType = "MessageSent"
    public static let eventVersion = 1

    public var message: MessageReference
    /// APNs `apns-id` or the FCM message `name`.
    public var providerMessageId: String
    public var attempts: Int
    public var sentAt: Date

    public init(message: MessageReference, providerMessageId: String, attempts: Int, sentAt: Date) {
        self.message = message
        self.providerMessageId = providerMessageId
        self.attempts = attempts
        self.sentAt = sentAt
    }
}

/// The message will not be delivered: `push.message-results`, key = messageId.
public struct MessageFailed: PushEvent, Hashable {
    public static let eventType = "MessageFailed"
    public static let eventVersion = 1

    /// `hard` (the device is unreachable for good: token quarantined), `soft` (this message
    /// cannot be sent: payload too large, configuration), `ignored` (given up on a transient
    /// error).
    public var failureType: String
    /// e.g. `payload-too-large`, `reserved-key`, `Unregistered`, `UNREGISTERED`.
    public var reason: String
    public var message: MessageReference
    public var attempts: Int
    public var failedAt: Date

    public init(message: MessageReference, failureType: String, reason: String, attempts: Int, failedAt: Date) {
        self.message = message
        self.failureType = failureType
        self.reason = reason
        self.attempts = attempts
        self.failedAt = failedAt
    }
}

/// The message's `validUntil` passed before a provider accepted it: `push.message-results`.
public struct MessageExpired: PushEvent, Hashable {
    public static let eventType = "MessageExpired"
    public static let eventVersion = 1

    public var message: MessageReference
    public var attempts: Int
    public var expiredAt: Date

    public init(message: MessageReference, attempts: Int, expiredAt: Date) {
        self.message = message
        self.attempts = attempts
        self.expiredAt = expiredAt
    }
}
