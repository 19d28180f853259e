import Foundation

/// An app a delivery targets, as the planner saw it at acceptance.
public struct DeliveryApp: Codable, Sendable, Hashable {
    public var appId: UUID
    public var integrationKey: String
    public var platform: String

    public init(appId: UUID, integrationKey: String, platform: String) {
        self.appId = appId
        self.integrationKey = integrationKey
        self.platform = platform
    }
}

/// A valid request became a delivery: `push.delivery-events`, key = deliveryId.
/// Carries the checked request so that the delivery can be understood (and the analysts'
/// `deliveries` table rebuilt) from the topic alone.
public struct DeliveryAccepted: PushEvent, Hashable {
    public static let eventType = "DeliveryAccepted"
    public static let eventVersion = 1

    /// Used as `_dId` in every payload: letters and digits only (never a comma).
    public var deliveryId: String
    public var requestId: String
    public var serviceId: UUID
    public var serviceName: String
    public var apps: [DeliveryApp]
    public var audience: DeliveryRequest.Audience
    public var content: DeliveryRequest.Content
    public var validUntil: Date
    /// When fan-out may start (the acceptance time when the request had no `sendAt`).
    public var sendAt: Date
    public var throttlePerSecond: Int?
    public var acceptedAt: Date

    public init(
        deliveryId: String, requestId: String, serviceId: UUID, serviceName: String, apps: [DeliveryApp],
        audience: DeliveryRequest.Audience, content: DeliveryRequest.Content, validUntil: Date, sendAt: Date,
        throttlePerSecond: Int?, acceptedAt: Date
    ) {
        self.deliveryId = deliveryId
        self.requestId = requestId
        self.serviceId = serviceId
        self.serviceName = serviceName
        self.apps = apps
        self.audience = audience
        self.content = content
        self.validUntil = validUntil
        self.sendAt = sendAt
        self.throttlePerSecond = throttlePerSecond
        self.acceptedAt = acceptedAt
    }
}

/// A request was not accepted: `push.delivery-events`, key = requestId (or
/// `unreadable:<partition>:<offset>` when the record had none). The raw record is on
/// `push.delivery-requests.dlq` with the same reason.
public struct DeliveryRejected: PushEvent, Hashable {
    public static let eventType = "DeliveryRejected"
    public static let eventVersion = 1

    public var requestId: String?
    /// A sentence for a person, naming the field at fault.
    public var reason: String
    /// Where the rejected record is: topic, partition, offset.
    public var sourceTopic: String
    public var sourcePartition: Int32
    public var sourceOffset: Int64
    public var rejectedAt: Date

    public init(requestId: String?, reason: String, sourceTopic: String, sourcePartition: Int32, sourceOffset: Int64, rejectedAt: Date) {
        self.requestId = requestId
        self.reason = reason
        self.sourceTopic = sourceTopic
        self.sourcePartition = sourcePartition
        self.sourceOffset = sourceOffset
        self.rejectedAt = rejectedAt
    }
}

/// Fan-out of a delivery began (its `sendAt` was reached): `push.delivery-events`.
public struct DeliveryPlanningStarted: PushEvent, Hashable {
    public static let eventType = "DeliveryPlanningStarted"
    public static let eventVersion = 1

    public var deliveryId: String
    public var startedAt: Date

    public init(deliveryId: String, startedAt: Date) {
        self.deliveryId = deliveryId
        self.startedAt = startedAt
    }
}

/// Devices left out at targeting time (disabled subscriptions): `push.delivery-events`.
/// Published once per fan-out chunk; may be repeated after a crash (consumers deduplicate on
/// delivery + app + token).
public struct DeliveryExclusionsRecorded: PushEvent, Hashable {
    public static let eventType = "DeliveryExclusionsRecorded"
    public static let eventVersion = 1

    public struct Exclusion: Codable, Sendable, Hashable {
        public var appId: UUID
        public var registrationToken: String
        public var platform: String
        /// e.g. `quarantined: Unregistered` for a token a provider declared invalid.
        public var reason: String

        public init(appId: UUID, registrationToken: String, platform: String, reason: String) {
            self.appId = appId
            self.registrationToken = registrationToken
            self.platform = platform
            self.reason = reason
        }
    }

    public var deliveryId: String
    public var exclusions: [Exclusion]
    public var excludedAt: Date

    public init(deliveryId: String, exclusions: [Exclusion], excludedAt: Date) {
        self.deliveryId = deliveryId
        self.exclusions = exclusions
        self.excludedAt = excludedAt
    }
}

/// Every targeted device has its message (or its planning failure): `push.delivery-events`.
public struct DeliveryPlanned: PushEvent, Hashable {
    public static let eventType = "DeliveryPlanned"
    public static let eventVersion = 1

    public var deliveryId: String
    /// Messages created, one per (app, token) after exclusions; includes those that failed at
    /// planning.
    public var targeted: Int
    /// Devices excluded at targeting (disabled subscriptions).
    public var excluded: Int
    /// Of `targeted`, messages that ended `failed` at planning (payload too large, reserved key)
    /// instead of going to a sender.
    public var failed: Int
    public var plannedAt: Date

    public init(deliveryId: String, targeted: Int, excluded: Int, failed: Int, plannedAt: Date) {
        self.deliveryId = deliveryId
        self.targeted = targeted
        self.excluded = excluded
        self.failed = failed
        self.plannedAt = plannedAt
    }
}
