import Foundation

/// Which stored provider credential a message is sent with: the sender looks the secret up by
/// `credentialId` (`push.app_credentials`); events never carry the secret.
package struct CredentialReference: Codable, Sendable, Hashable {
    package var credentialId: UUID
    /// `apns-token`, `apns-certificate` or `fcm-service-account`.
    package var kind: String
    package var fingerprint: String

    package init(credentialId: UUID, kind: String, fingerprint: String) {
        self.credentialId = credentialId
        self.kind = kind
        self.fingerprint = fingerprint
    }
}

/// One notification for one iOS device: `push.apns.messages`, key = `<appId>:<tokenDigest>`
/// (`<appId>:<token>` before version 2; one device's messages stay in order on one partition).
/// Everything the APNs sender needs.
///
/// Version 2 records are sealed (`sealing`): the token and the payload are written only inside
/// the box, and a record read from the wire has both empty until `opened(with:)`. A record
/// without `sealing` (version 1, or a retry of one) carries them in clear.
package struct APNSMessagePlanned: PushEvent, Hashable {
    package static let eventType = "APNSMessagePlanned"
    package static let eventVersion = 2

    /// The message's identity in every event and table, and the `apns-id` header.
    package var messageId: UUID
    /// `_mId` in the payload: Campaign's broadLog id, a positive 32-bit integer unique across
    /// deliveries until 2^31 messages have been planned. Absent on records planned before it
    /// existed.
    package var broadLogId: Int32?
    /// `_dId` in the payload.
    package var deliveryId: String
    package var appId: UUID
    package var registrationToken: String
    /// `sandbox` or `production`: which APNs host.
    package var environment: String
    /// nil when the app had no credential at planning time; the sender then looks up the app's
    /// current credential (and fails the message as a configuration error if there is none).
    package var credential: CredentialReference?
    /// `apns-topic` (the bundle id).
    package var topic: String
    /// `apns-push-type`: `alert` or `background`.
    package var pushType: String
    /// `apns-priority`: 10, or 5 for a background (silent) push.
    package var priority: Int
    /// `apns-collapse-id`.
    package var collapseId: String?
    /// The JSON payload exactly as it is to be sent (`aps`, `_mId`, `_dId`, variables).
    package var payload: String
    /// `apns-expiration`; nothing is sent or retried after it.
    package var validUntil: Date
    /// 1 for the first attempt; a sender's retry republishes with attempt + 1.
    package var attempt: Int
    package var plannedAt: Date
    /// Set on retry records (`push.apns.retries`): not to be sent before this time. Absent on
    /// the planner's records.
    package var notBefore: Date?
    /// The delivery's `throttle.perSecond`: the senders send its messages at most that many per
    /// second across every instance (docs/senders.md, "Throttle"). Absent: unthrottled (also on
    /// records planned before it existed).
    package var throttlePerSecond: Int?
    /// Version 2: the subject, the token's digest and the sealed token and payload. nil: token
    /// and payload in clear (a record planned before version 2, or a retry of one).
    package var sealing: MessageSealing?
    /// The tag of the delivery's `content.languages` whose texts the message carries; absent
    /// for the default texts (and on records planned before it existed). Carried into the
    /// results (`MessageReference.language`) and `push.broad_log.language`.
    package var language: String?
    /// The name of the delivery's A/B variant (`content.variants`) whose texts the message
    /// carries; absent without variants. Carried into the results (`MessageReference.variant`)
    /// and `push.broad_log.variant`.
    package var variant: String?

    package init(
        messageId: UUID, broadLogId: Int32?, deliveryId: String, appId: UUID, registrationToken: String, environment: String,
        credential: CredentialReference?, topic: String, pushType: String, priority: Int, collapseId: String?,
        payload: String, validUntil: Date, attempt: Int, plannedAt: Date, notBefore: Date? = nil, throttlePerSecond: Int? = nil,
        sealing: MessageSealing? = nil, language: String? = nil, variant: String? = nil
    ) {
        self.messageId = messageId
        self.broadLogId = broadLogId
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
        self.throttlePerSecond = throttlePerSecond
        self.sealing = sealing
        self.language = language
        self.variant = variant
    }
}

/// One message for one Android device: `push.fcm.messages`, key = `<appId>:<tokenDigest>`;
/// sealed like `APNSMessagePlanned` (the box holds the token and `message`).
package struct FCMMessagePlanned: PushEvent, Hashable {
    package static let eventType = "FCMMessagePlanned"
    package static let eventVersion = 2

    package var messageId: UUID
    /// `_mId` in the data (see `APNSMessagePlanned.broadLogId`).
    package var broadLogId: Int32?
    /// `_dId` in the data.
    package var deliveryId: String
    package var appId: UUID
    package var registrationToken: String
    /// The Firebase project of `POST /v1/projects/{projectId}/messages:send`.
    package var projectId: String
    package var credential: CredentialReference?
    /// The HTTP v1 `message` object as JSON text (token, data or notification, android). Its
    /// `android.ttl` is the time left at planning; the sender recomputes it from `validUntil`.
    package var message: String
    package var validUntil: Date
    package var attempt: Int
    package var plannedAt: Date
    /// Set on retry records (`push.fcm.retries`): not to be sent before this time.
    package var notBefore: Date?
    /// The delivery's `throttle.perSecond`: the senders send its messages at most that many per
    /// second across every instance (docs/senders.md, "Throttle"). Absent: unthrottled (also on
    /// records planned before it existed).
    package var throttlePerSecond: Int?
    /// Version 2: as `APNSMessagePlanned.sealing` (the box holds the token and `message`).
    package var sealing: MessageSealing?
    /// As `APNSMessagePlanned.language`.
    package var language: String?
    /// As `APNSMessagePlanned.variant`.
    package var variant: String?

    package init(
        messageId: UUID, broadLogId: Int32?, deliveryId: String, appId: UUID, registrationToken: String, projectId: String,
        credential: CredentialReference?, message: String, validUntil: Date, attempt: Int, plannedAt: Date, notBefore: Date? = nil,
        throttlePerSecond: Int? = nil, sealing: MessageSealing? = nil, language: String? = nil, variant: String? = nil
    ) {
        self.messageId = messageId
        self.broadLogId = broadLogId
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
        self.throttlePerSecond = throttlePerSecond
        self.sealing = sealing
        self.language = language
        self.variant = variant
    }
}

/// What every message result says about the message it concerns. Since version 2 of the
/// results the device is named by its token's digest (`TokenDigest`), never by its token: the
/// results topic keeps no readable trace of an erased person (docs/architecture.md, "Erasure").
/// A version-1 result (`registrationToken` in clear) is read by hashing the token.
package struct MessageReference: Sendable, Hashable {
    package var messageId: UUID
    /// The payload's `_mId` (absent for messages planned before it existed).
    package var broadLogId: Int32?
    package var deliveryId: String
    package var appId: UUID
    /// Lowercase hex SHA-256 of the device's token (`push.subscriptions.token_digest`).
    package var tokenDigest: String
    package var platform: Platform
    /// When the planner planned the message (its record's `plannedAt`): the broad log's
    /// `created_at`, since the result writes the row. Absent from results written before it
    /// existed (the row then takes the result's time).
    package var plannedAt: Date?
    /// The tag of `content.languages` whose texts the message carried (`push.broad_log.language`);
    /// absent for the default texts.
    package var language: String?
    /// The name of the A/B variant the message carried (`push.broad_log.variant`); absent
    /// without variants.
    package var variant: String?

    package init(
        messageId: UUID, broadLogId: Int32?, deliveryId: String, appId: UUID, tokenDigest: String, platform: Platform, plannedAt: Date? = nil,
        language: String? = nil, variant: String? = nil
    ) {
        self.messageId = messageId
        self.broadLogId = broadLogId
        self.deliveryId = deliveryId
        self.appId = appId
        self.tokenDigest = tokenDigest
        self.platform = platform
        self.plannedAt = plannedAt
        self.language = language
        self.variant = variant
    }
}

extension MessageReference: Codable {
    private enum CodingKeys: String, CodingKey {
        case messageId, broadLogId, deliveryId, appId, tokenDigest, registrationToken, platform, plannedAt, language, variant
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let digest =
            try container.decodeIfPresent(String.self, forKey: .tokenDigest)
            ?? TokenDigest.of(try container.decode(String.self, forKey: .registrationToken))
        self.init(
            messageId: try container.decode(UUID.self, forKey: .messageId), broadLogId: try container.decodeIfPresent(Int32.self, forKey: .broadLogId),
            deliveryId: try container.decode(String.self, forKey: .deliveryId), appId: try container.decode(UUID.self, forKey: .appId),
            tokenDigest: digest, platform: try container.decode(Platform.self, forKey: .platform),
            plannedAt: try container.decodeIfPresent(Date.self, forKey: .plannedAt), language: try container.decodeIfPresent(String.self, forKey: .language),
            variant: try container.decodeIfPresent(String.self, forKey: .variant))
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(messageId, forKey: .messageId)
        try container.encodeIfPresent(broadLogId, forKey: .broadLogId)
        try container.encode(deliveryId, forKey: .deliveryId)
        try container.encode(appId, forKey: .appId)
        try container.encode(tokenDigest, forKey: .tokenDigest)
        try container.encode(platform, forKey: .platform)
        try container.encodeIfPresent(plannedAt, forKey: .plannedAt)
        try container.encodeIfPresent(language, forKey: .language)
        try container.encodeIfPresent(variant, forKey: .variant)
    }
}

/// The provider accepted the message: `push.message-results`, key = messageId.
package struct MessageSent: PushEvent, Hashable {
    package static let eventType = "MessageSent"
    /// 2: `message` names the device by `tokenDigest` (1: by `registrationToken`, still read).
    package static let eventVersion = 2

    package var message: MessageReference
    /// APNs `apns-id` or the FCM message `name`.
    package var providerMessageId: String
    package var attempts: Int
    package var sentAt: Date

    package init(message: MessageReference, providerMessageId: String, attempts: Int, sentAt: Date) {
        self.message = message
        self.providerMessageId = providerMessageId
        self.attempts = attempts
        self.sentAt = sentAt
    }
}

/// The message will not be delivered: `push.message-results`, key = messageId.
package struct MessageFailed: PushEvent, Hashable {
    package static let eventType = "MessageFailed"
    /// 2: `message` names the device by `tokenDigest` (1: by `registrationToken`, still read).
    package static let eventVersion = 2

    /// `hard` (the device is unreachable for good: token quarantined), `soft` (this message
    /// cannot be sent: payload too large, configuration), `ignored` (given up on a transient
    /// error).
    package var failureType: String
    /// e.g. `payload-too-large`, `reserved-key`, `Unregistered`, `UNREGISTERED`.
    package var reason: String
    package var message: MessageReference
    package var attempts: Int
    package var failedAt: Date

    package init(message: MessageReference, failureType: String, reason: String, attempts: Int, failedAt: Date) {
        self.message = message
        self.failureType = failureType
        self.reason = reason
        self.attempts = attempts
        self.failedAt = failedAt
    }
}

/// The message's `validUntil` passed before a provider accepted it: `push.message-results`.
package struct MessageExpired: PushEvent, Hashable {
    package static let eventType = "MessageExpired"
    /// 2: `message` names the device by `tokenDigest` (1: by `registrationToken`, still read).
    package static let eventVersion = 2

    package var message: MessageReference
    package var attempts: Int
    package var expiredAt: Date

    package init(message: MessageReference, attempts: Int, expiredAt: Date) {
        self.message = message
        self.attempts = attempts
        self.expiredAt = expiredAt
    }
}

/// The message's delivery was cancelled before a provider accepted it: the sender that held it
/// did not send it (`push.message-results`). A final status, like `MessageExpired`.
package struct MessageCancelled: PushEvent, Hashable {
    package static let eventType = "MessageCancelled"
    /// 2: `message` names the device by `tokenDigest` (1: by `registrationToken`, still read).
    package static let eventVersion = 2

    package var message: MessageReference
    package var attempts: Int
    package var cancelledAt: Date

    package init(message: MessageReference, attempts: Int, cancelledAt: Date) {
        self.message = message
        self.attempts = attempts
        self.cancelledAt = cancelledAt
    }
}
