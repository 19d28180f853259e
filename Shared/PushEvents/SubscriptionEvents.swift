import Foundation

/// A device registered (or re-registered) for an app: `push.subscriptions`, key
/// `<appId>:<registrationToken>`. A re-registration replaces the device fields and params and
/// clears a quarantine.
public struct SubscriptionRegistered: PushEvent, Hashable {
    public static let eventType = "SubscriptionRegistered"
    public static let eventVersion = 1

    public var appId: UUID
    public var integrationKey: String
    /// `ios` or `android`.
    public var platform: String
    public var registrationToken: String
    public var userKey: String
    public var deviceImei: String?
    public var deviceName: String
    public var deviceModel: String
    public var deviceBrand: String
    public var deviceManufacturer: String
    public var osName: String
    public var osVersion: String
    public var osLanguage: String
    /// The kept `additionalParams`, as strings.
    public var params: [String: String]
    public var registeredAt: Date

    public init(
        appId: UUID, integrationKey: String, platform: String, registrationToken: String, userKey: String,
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
    public static func key(appId: UUID, registrationToken: String) -> String {
        "\(appId.uuidString.lowercased()):\(registrationToken)"
    }
}

/// A provider said the token is no longer valid (quarantine): `push.subscriptions`.
/// Ignored by the projection when `invalidSince` is older than the subscription's last
/// registration (the device registered again after the provider's verdict).
public struct SubscriptionDisabled: PushEvent, Hashable {
    public static let eventType = "SubscriptionDisabled"
    public static let eventVersion = 1

    public var appId: UUID
    public var registrationToken: String
    /// e.g. `Unregistered`, `BadDeviceToken`, `UNREGISTERED`.
    public var reason: String
    /// When the provider last knew the token invalid (APNs 410 `timestamp`), else the time of
    /// the failed send.
    public var invalidSince: Date

    public init(appId: UUID, registrationToken: String, reason: String, invalidSince: Date) {
        self.appId = appId
        self.registrationToken = registrationToken
        self.reason = reason
        self.invalidSince = invalidSince
    }
}

/// A disabled subscription was removed after the purge delay: `push.subscriptions`.
public struct SubscriptionPurged: PushEvent, Hashable {
    public static let eventType = "SubscriptionPurged"
    public static let eventVersion = 1

    public var appId: UUID
    public var registrationToken: String

    public init(appId: UUID, registrationToken: String) {
        self.appId = appId
        self.registrationToken = registrationToken
    }
}
