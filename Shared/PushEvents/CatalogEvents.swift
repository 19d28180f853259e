import Foundation

/// A service (of type mobile application) was created or changed: `push.catalog`, key
/// `service:<serviceId>`.
package struct ServiceDefined: PushEvent, Hashable {
    package static let eventType = "ServiceDefined"
    package static let eventVersion = 1

    package var serviceId: UUID
    /// Internal name, unique; what delivery requests name in `service`.
    package var name: String
    package var label: String

    package init(serviceId: UUID, name: String, label: String) {
        self.serviceId = serviceId
        self.name = name
        self.label = label
    }
}

/// A service was deleted (its apps first): `push.catalog`, key `service:<serviceId>`.
package struct ServiceDeleted: PushEvent, Hashable {
    package static let eventType = "ServiceDeleted"
    package static let eventVersion = 1
    package var serviceId: UUID

    package init(serviceId: UUID) { self.serviceId = serviceId }
}

/// A service's frequency cap was set or lifted (`PUT`/`DELETE
/// /admin/v1/services/{name}/frequency-cap`): `push.catalog`, key `service:<serviceId>`. The
/// planner leaves out of a bulk delivery every person who already got `messages` bulk
/// deliveries of the service in the last `periodHours` (docs/delivery-requests.md, "Frequency
/// cap").
package struct ServiceFrequencyCapSet: PushEvent, Hashable {
    package static let eventType = "ServiceFrequencyCapSet"
    package static let eventVersion = 1

    package var serviceId: UUID
    /// nil: the cap is lifted.
    package var cap: FrequencyCap?

    package init(serviceId: UUID, cap: FrequencyCap?) {
        self.serviceId = serviceId
        self.cap = cap
    }
}

/// At most `messages` bulk deliveries per person in any `periodHours` (rolling).
package struct FrequencyCap: Codable, Sendable, Hashable {
    package var messages: Int
    package var periodHours: Int

    package init(messages: Int, periodHours: Int) {
        self.messages = messages
        self.periodHours = periodHours
    }

    package static let messagesRange = 1...1_000
    /// Up to 30 days: the planner keeps 31 days of `push.frequency_log`.
    package static let periodHoursRange = 1...720
}

/// An app was created or changed: `push.catalog`, key `app:<appId>`. Carries the whole app, so
/// the latest event is its state.
package struct AppDefined: PushEvent, Hashable {
    package static let eventType = "AppDefined"
    package static let eventVersion = 1

    package struct Sound: Codable, Sendable, Hashable {
        package var name: String
        package var label: String
        package init(name: String, label: String) {
            self.name = name
            self.label = label
        }
    }

    /// A subscription parameter kept from `additionalParams`, with its type
    /// (`string`, `integer`, `decimal`, `boolean`, `date`).
    package struct SubscriptionParameter: Codable, Sendable, Hashable {
        package var name: String
        package var type: String
        package init(name: String, type: String) {
            self.name = name
            self.type = type
        }
    }

    package var appId: UUID
    package var serviceId: UUID
    /// `ios` or `android`.
    package var platform: Platform
    package var integrationKey: String
    package var label: String
    /// iOS: `sandbox` or `production`; Android: `production`.
    package var environment: String
    /// iOS: the bundle id, used as APNs topic.
    package var bundleId: String?
    /// Android: the FCM project id.
    package var fcmProjectId: String?
    /// Application variables a delivery may fill.
    package var variables: [String]
    /// Sounds the app ships (iOS and Android); a delivery's sound must be one of them or `default`.
    package var sounds: [Sound]
    /// Which `additionalParams` are kept, with their types; empty keeps every parameter as text.
    package var subscriptionParameters: [SubscriptionParameter]

    package init(
        appId: UUID, serviceId: UUID, platform: Platform, integrationKey: String, label: String, environment: String,
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
package struct AppDeleted: PushEvent, Hashable {
    package static let eventType = "AppDeleted"
    package static let eventVersion = 1
    package var appId: UUID

    package init(appId: UUID) { self.appId = appId }
}

/// A new version of a service's message template (`PUT /admin/v1/services/{name}/templates/{template}`):
/// `push.catalog`, key `template:<serviceId>:<name>`. Versions count from 1; a request names the
/// template (and maybe a version) and overrides its fields (docs/delivery-requests.md).
package struct TemplateDefined: PushEvent, Hashable {
    package static let eventType = "TemplateDefined"
    package static let eventVersion = 1

    package var serviceId: UUID
    package var name: String
    package var version: Int
    /// What a request's `content` holds: texts with their placeholders, variables, platform options.
    package var content: DeliveryRequest.Content

    package init(serviceId: UUID, name: String, version: Int, content: DeliveryRequest.Content) {
        self.serviceId = serviceId
        self.name = name
        self.version = version
        self.content = content
    }
}

/// A new version of a service's named audience (`PUT /admin/v1/services/{name}/segments/{segment}`):
/// `push.catalog`, key `segment:<serviceId>:<name>`. A request targets it with
/// `"audience": {"segment": {"name": "...", "version": n}}` (docs/delivery-requests.md "Segments").
package struct SegmentDefined: PushEvent, Hashable {
    package static let eventType = "SegmentDefined"
    package static let eventVersion = 1

    package var serviceId: UUID
    package var name: String
    package var version: Int
    /// The conditions, as a request's `audience.filter` holds them (checked against the targeted
    /// apps when a request uses the segment).
    package var filter: AudienceFilter
    package var description: String?

    package init(serviceId: UUID, name: String, version: Int, filter: AudienceFilter, description: String? = nil) {
        self.serviceId = serviceId
        self.name = name
        self.version = version
        self.filter = filter
        self.description = description
    }
}
