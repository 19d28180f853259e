import Foundation

/// A device registered (or re-registered) for an app: `push.subscriptions`, key
/// `<appId>:<registrationToken>` (version 1; since records are sealed the registration service writes
/// version 2, `SealedSubscriptionRegistered`). A re-registration replaces the device fields and params and
/// clears a quarantine.
package struct SubscriptionRegistered: PushEvent, Hashable {
    package static let eventType = "SubscriptionRegistered"
    package static let eventVersion = 1

    package var appId: UUID
    package var integrationKey: String
    /// `ios` or `android`.
    package var platform: Platform
    package var registrationToken: String
    package var userKey: String
    package var deviceImei: String?
    package var deviceName: String
    package var deviceModel: String
    package var deviceBrand: String
    package var deviceManufacturer: String
    package var osName: String
    package var osVersion: String
    package var osLanguage: String
    /// The kept `additionalParams`, as strings.
    package var params: [String: String]
    package var registeredAt: Date

    package init(
        appId: UUID, integrationKey: String, platform: Platform, registrationToken: String, userKey: String,
        deviceImei: String?, deviceName: String, deviceModel: String, deviceBrand: String, deviceManufacturer: String,
        osName: String, osVersion: String, osLanguage: String, params: [String: String], registeredAt: Date
    ) {
        self.appId = appId
        self.integrationKey = integrationKey
        self.platform = platform
        self.registrationToken = registrationToken
        self.userKey = userKey
        self.deviceImei = deviceImei
        self.deviceName = deviceName
        self.deviceModel = deviceModel
        self.deviceBrand = deviceBrand
        self.deviceManufacturer = deviceManufacturer
        self.osName = osName
        self.osVersion = osVersion
        self.osLanguage = osLanguage
        self.params = params
        self.registeredAt = registeredAt
    }

    /// The Kafka key of a subscription's events.
    package static func key(appId: UUID, registrationToken: String) -> String {
        "\(appId.uuidString.lowercased()):\(registrationToken)"
    }
}

/// A provider said the token is no longer valid (quarantine): `push.subscriptions`, key
/// `<appId>:<tokenDigest>` (version 2, written by the senders since records are sealed). It names the device
/// by the SHA-256 of its token, never the token, so that the topic holds nothing readable about the
/// device once its person is erased (docs/architecture.md, "Erasure"). Ignored by the projection
/// when `invalidSince` is older than the subscription's last registration (the device registered
/// again after the provider's verdict).
package struct SubscriptionDisabled: PushEvent, Hashable {
    package static let eventType = "SubscriptionDisabled"
    package static let eventVersion = 2

    package var appId: UUID
    /// Lowercase hex SHA-256 of the registration token (`TokenDigest`).
    package var tokenDigest: String
    /// e.g. `Unregistered`, `BadDeviceToken`, `UNREGISTERED`.
    package var reason: String
    /// When the provider last knew the token invalid (APNs 410 `timestamp`), else the time of
    /// the failed send.
    package var invalidSince: Date

    package init(appId: UUID, tokenDigest: String, reason: String, invalidSince: Date) {
        self.appId = appId
        self.tokenDigest = tokenDigest
        self.reason = reason
        self.invalidSince = invalidSince
    }
}

/// `SubscriptionDisabled` version 1, with the token in clear (key `<appId>:<token>`): written by
/// the senders before records were sealed, still read (`upcast`), never written.
package struct SubscriptionDisabledV1: PushEvent, Hashable {
    package static let eventType = "SubscriptionDisabled"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String
    package var reason: String
    package var invalidSince: Date

    package init(appId: UUID, registrationToken: String, reason: String, invalidSince: Date) {
        self.appId = appId
        self.registrationToken = registrationToken
        self.reason = reason
        self.invalidSince = invalidSince
    }

    /// The same quarantine as version 2: the token replaced by its digest.
    package var upcast: SubscriptionDisabled {
        SubscriptionDisabled(appId: appId, tokenDigest: TokenDigest.of(registrationToken), reason: reason, invalidSince: invalidSince)
    }
}

/// A disabled subscription was removed after the purge delay: `push.subscriptions`, key
/// `<appId>:<tokenDigest>` (version 2; the device by digest, as `SubscriptionDisabled`).
package struct SubscriptionPurged: PushEvent, Hashable {
    package static let eventType = "SubscriptionPurged"
    package static let eventVersion = 2

    package var appId: UUID
    package var tokenDigest: String

    package init(appId: UUID, tokenDigest: String) {
        self.appId = appId
        self.tokenDigest = tokenDigest
    }
}

/// `SubscriptionPurged` version 1 (the token in clear): still read (`upcast`), never written.
package struct SubscriptionPurgedV1: PushEvent, Hashable {
    package static let eventType = "SubscriptionPurged"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String

    package init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }

    package var upcast: SubscriptionPurged { SubscriptionPurged(appId: appId, tokenDigest: TokenDigest.of(registrationToken)) }
}

/// An operator lifted a device's quarantine (`POST /admin/v1/apps/{id}/quarantine/lift`):
/// `push.subscriptions`, key `<appId>:<tokenDigest>` (version 2; the device by digest). The
/// subscription is enabled again and targeted by the next deliveries; if the provider still
/// refuses the token, the next send quarantines it again.
package struct SubscriptionReenabled: PushEvent, Hashable {
    package static let eventType = "SubscriptionReenabled"
    package static let eventVersion = 2

    package var appId: UUID
    package var tokenDigest: String

    package init(appId: UUID, tokenDigest: String) {
        self.appId = appId
        self.tokenDigest = tokenDigest
    }
}

/// `SubscriptionReenabled` version 1 (the token in clear): still read (`upcast`), never written.
package struct SubscriptionReenabledV1: PushEvent, Hashable {
    package static let eventType = "SubscriptionReenabled"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String

    package init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }

    package var upcast: SubscriptionReenabled { SubscriptionReenabled(appId: appId, tokenDigest: TokenDigest.of(registrationToken)) }
}

/// An operator unsubscribed a device from its service (`POST /admin/v1/services/{name}/unsubscribe`,
/// by token or by user key: one event per subscription): `push.subscriptions`, key
/// `<appId>:<tokenDigest>`. It names the device by the SHA-256 of its token, never the token,
/// so that the topic holds nothing readable once the person is erased (docs/architecture.md,
/// "Erasure"). The device stays registered but is excluded from every delivery
/// (`exclusion_log` reason `unsubscribed`) until a `SubscriptionResubscribed`; a re-registration
/// by the SDK does not subscribe it again (the SDK has no unregister call and re-registers on its
/// own, docs/registration.md). The envelope's `occurredAt` is `push.subscriptions.unsubscribed_at`.
package struct SubscriptionUnsubscribed: PushEvent, Hashable {
    package static let eventType = "SubscriptionUnsubscribed"
    package static let eventVersion = 1

    package var appId: UUID
    /// Lowercase hex SHA-256 of the registration token's UTF-8 bytes (`push.subscriptions.token_digest`).
    package var tokenDigest: String

    package init(appId: UUID, tokenDigest: String) {
        self.appId = appId
        self.tokenDigest = tokenDigest
    }
}

/// An operator subscribed an unsubscribed device again (`POST /admin/v1/services/{name}/resubscribe`):
/// `push.subscriptions`, key `<appId>:<tokenDigest>`; the next deliveries target it again.
package struct SubscriptionResubscribed: PushEvent, Hashable {
    package static let eventType = "SubscriptionResubscribed"
    package static let eventVersion = 1

    package var appId: UUID
    package var tokenDigest: String

    package init(appId: UUID, tokenDigest: String) {
        self.appId = appId
        self.tokenDigest = tokenDigest
    }
}

/// `SubscriptionRegistered` version 2: the personal fields sealed under the data key of the
/// person (or, without a user key, of the device) in `push.subject_keys`, so that erasing the
/// person (destroying the key) leaves nothing readable on the topic. `push.subscriptions`, key
/// `<appId>:<tokenDigest>`: no token in the key either. Only the registration service writes it
/// and only the subscription projection reads it (docs/events.md).
package struct SealedSubscriptionRegistered: PushEvent, Hashable {
    package static let eventType = "SubscriptionRegistered"
    package static let eventVersion = 2

    package var appId: UUID
    package var integrationKey: String
    package var platform: Platform
    /// The `push.subject_keys` row whose key sealed `sealed`.
    package var subjectId: UUID
    /// Lowercase hex SHA-256 of the token: how the other subscription events name the device.
    package var tokenDigest: String
    /// Base64 of AES-256-GCM's nonce, ciphertext and tag over the JSON of
    /// `SubscriptionPersonalFields`, authenticated with `<appId>:<tokenDigest>`.
    package var sealed: String
    package var registeredAt: Date

    package init(
        appId: UUID, integrationKey: String, platform: Platform, subjectId: UUID, tokenDigest: String, sealed: String, registeredAt: Date
    ) {
        self.appId = appId
        self.integrationKey = integrationKey
        self.platform = platform
        self.subjectId = subjectId
        self.tokenDigest = tokenDigest
        self.sealed = sealed
        self.registeredAt = registeredAt
    }

    /// The record key: the app and the token's digest.
    package static func key(appId: UUID, tokenDigest: String) -> String {
        "\(appId.uuidString.lowercased()):\(tokenDigest)"
    }
}

/// What a version-2 registration seals: every field of `SubscriptionRegistered` that says who or
/// which device.
package struct SubscriptionPersonalFields: Codable, Sendable, Hashable {
    package var registrationToken: String
    package var userKey: String
    package var deviceImei: String?
    package var deviceName: String
    package var deviceModel: String
    package var deviceBrand: String
    package var deviceManufacturer: String
    package var osName: String
    package var osVersion: String
    package var osLanguage: String
    package var params: [String: String]

    package init(_ registration: SubscriptionRegistered) {
        registrationToken = registration.registrationToken
        userKey = registration.userKey
        deviceImei = registration.deviceImei
        deviceName = registration.deviceName
        deviceModel = registration.deviceModel
        deviceBrand = registration.deviceBrand
        deviceManufacturer = registration.deviceManufacturer
        osName = registration.osName
        osVersion = registration.osVersion
        osLanguage = registration.osLanguage
        params = registration.params
    }
}

extension SubscriptionRegistered {
    /// The registration a sealed one holds, once opened.
    package init(_ sealed: SealedSubscriptionRegistered, opened fields: SubscriptionPersonalFields) {
        self.init(
            appId: sealed.appId, integrationKey: sealed.integrationKey, platform: sealed.platform, registrationToken: fields.registrationToken,
            userKey: fields.userKey, deviceImei: fields.deviceImei, deviceName: fields.deviceName, deviceModel: fields.deviceModel,
            deviceBrand: fields.deviceBrand, deviceManufacturer: fields.deviceManufacturer, osName: fields.osName, osVersion: fields.osVersion,
            osLanguage: fields.osLanguage, params: fields.params, registeredAt: sealed.registeredAt)
    }
}

/// A person (or an anonymous device) was erased (`POST /admin/v1/services/{name}/erase`): the
/// audit record, on `push.subscriptions` with key `erasure:<erasureId>`. It says that an erasure
/// happened and how much it removed, never whom: no user key, token or digest. The subscription
/// projection ignores it.
package struct PersonErased: PushEvent, Hashable {
    package static let eventType = "PersonErased"
    package static let eventVersion = 1

    package var erasureId: UUID
    package var serviceId: UUID
    /// `user` (erased by user key) or `device` (by registration token, a device without one).
    package var subjectKind: String
    /// Subscriptions deleted, data keys destroyed, and log rows deleted (`broad_log`,
    /// `exclusion_log`, `tracking_log`).
    package var subscriptions: Int
    package var dataKeys: Int
    package var broadLogRows: Int
    package var exclusionLogRows: Int
    package var trackingLogRows: Int
    package var erasedAt: Date

    package init(
        erasureId: UUID, serviceId: UUID, subjectKind: String, subscriptions: Int, dataKeys: Int, broadLogRows: Int, exclusionLogRows: Int,
        trackingLogRows: Int, erasedAt: Date
    ) {
        self.erasureId = erasureId
        self.serviceId = serviceId
        self.subjectKind = subjectKind
        self.subscriptions = subscriptions
        self.dataKeys = dataKeys
        self.broadLogRows = broadLogRows
        self.exclusionLogRows = exclusionLogRows
        self.trackingLogRows = trackingLogRows
        self.erasedAt = erasedAt
    }
}
