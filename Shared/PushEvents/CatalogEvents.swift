import Foundation

/// A service (of type mobile application) was created or changed: `push.catalog`, key
/// `service:<serviceId>`.
public struct ServiceDefined: PushEvent, Hashable {
    public static let eventType = "ServiceDefined"
    public static let eventVersion = 1

    public var serviceId: UUID
    /// Internal name, unique; what delivery requests name in `service`.
    public var name: String
    public var label: String

    public init(serviceId: UUID, name: String, label: String) {
        self.serviceId = serviceId
        self.name = name
        self.label = label
    }
}

/// A service was deleted (its apps first): `push.catalog`, key `service:<serviceId>`.
public struct ServiceDeleted: PushEvent, Hashable {
    public static let eventType = "ServiceDeleted"
    public static let eventVersion = 1
    public var serviceId: UUID

    public init(serviceId: UUID) { self.serviceId = serviceId }
}

/// An app was created or changed: `push.catalog`, key `app:<appId>`. Carries the whole app, so
/// the latest event is its state.
public struct AppDefined: PushEvent, Hashable {
    public static let eventType = "AppDefined"
    public static let eventVersion = 1

    public struct Sound: Codable, Sendable, Hashable {
        public var name: String
        public var label: String
        public init(name: String, label: String) {
            self.name = name
            self.label = label
        }
    }

    /// A subscription parameter kept from `additionalParams`, with its type
    /// (`string`, `integer`, `decimal`, `boolean`, `date`).
    public struct SubscriptionParameter: Codable, Sendable, Hashable {
        public var name: String
        public var type: String
        public init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    public var appId: UUID
    public var serviceId: UUID
    /// `ios` or `android`.
    public var platform: String
    public var integrationKey: String
    public var label: String
    /// iOS: `sandbox` or `production`; Android: `production`.
    public var environment: String
    /// iOS: the bundle id, used as APNs topic.
    public var bundleId: String?
    /// Android: the FCM project id.
    public var fcmProjectId: String?
    /// Application variables a delivery may fill.
    public var variables: [String]
    /// iOS sounds.
    public var sounds: [Sound]
    /// Which `additionalParams` are kept, with their types; empty keeps every parameter as text.
    public var subscriptionParameters: [SubscriptionParameter]

    public init(
        appId: UUID, serviceId: UUID, platform: String, integrationKey: String, label: String, environment: String,
        bundleId: String?, fcmProjectId: String?, variables: [String], sounds: [Sound], subscriptionParameters: [SubscriptionParameter]
    ) {
        self.appId = appId
        self.serviceId = serviceId
        self.platform = platform
        self.integrationKey = integrationKey
        self.label = label
        self.environment = environment
        self.bundleId = bundleId
        self.fcmProjectId = fcmProjectId
        self.variables = variables
        self.sounds = sounds
        self.subscriptionParameters = subscriptionParameters
    }
}

/// An app was deleted: `push.catalog`, key `app:<appId>`.
public struct AppDeleted: PushEvent, Hashable {
    public static let eventType = "AppDeleted"
    public static let eventVersion = 1
    public var appId: UUID

    public init(appId: UUID) { self.appId = appId }
}
