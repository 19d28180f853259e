import Foundation

/// A device registered (or re-registered) for an app: `push.subscriptions`, key
/// `<appId>:<registrationToken>`. A re-registration replaces the device fields and params and
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

/// A provider said the token is no longer valid (quarantine): `push.subscriptions`.
/// Ignored by the projection when `invalidSince` is older than the subscription's last
/// registration (the device registered again after the provider's verdict).
package struct SubscriptionDisabled: PushEvent, Hashable {
    package static let eventType = "SubscriptionDisabled"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String
    /// e.g. `Unregistered`, `BadDeviceToken`, `UNREGISTERED`.
    package var reason: String
    /// When the provider last knew the token invalid (APNs 410 `timestamp`), else the time of
    /// the failed send.
    package var invalidSince: Date

    package init(appId: UUID, registrationToken: String, reason: String, invalidSince: Date) {
        self.appId = appId
        self.registrationToken = registrationToken
        self.reason = reason
        self.invalidSince = invalidSince
    }
}

/// A disabled subscription was removed after the purge delay: `push.subscriptions`.
package struct SubscriptionPurged: PushEvent, Hashable {
    package static let eventType = "SubscriptionPurged"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String

    package init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }
}

/// An operator lifted a device's quarantine (`POST /admin/v1/apps/{id}/quarantine/lift`):
/// `push.subscriptions`, key `<appId>:<token>`. The subscription is enabled again and targeted by
/// the next deliveries; if the provider still refuses the token, the next send quarantines it
/// again.
package struct SubscriptionReenabled: PushEvent, Hashable {
    package static let eventType = "SubscriptionReenabled"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String

    package init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }
}

/// An operator unsubscribed a device from its service (`POST /admin/v1/services/{name}/unsubscribe`,
/// by token or by user key: one event per subscription): `push.subscriptions`, key `<appId>:<token>`.
/// The device stays registered but is excluded from every delivery (`exclusion_log` reason
/// `unsubscribed`) until a `SubscriptionResubscribed`; a re-registration by the SDK does not
/// subscribe it again (the SDK has no unregister call and re-registers on its own,
/// docs/registration.md). The envelope's `occurredAt` is `push.subscriptions.unsubscribed_at`.
package struct SubscriptionUnsubscribed: PushEvent, Hashable {
    package static let eventType = "SubscriptionUnsubscribed"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String

    package init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }
}

/// An operator subscribed an unsubscribed device again (`POST /admin/v1/services/{name}/resubscribe`):
/// `push.subscriptions`, key `<appId>:<token>`; the next deliveries target it again.
package struct SubscriptionResubscribed: PushEvent, Hashable {
    package static let eventType = "SubscriptionResubscribed"
    package static let eventVersion = 1

    package var appId: UUID
    package var registrationToken: String

    package init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }
}
