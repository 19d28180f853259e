import Foundation

/// An app a delivery targets, as the planner saw it at acceptance.
package struct DeliveryApp: Codable, Sendable, Hashable {
    package var appId: UUID
    package var integrationKey: String
    package var platform: Platform

    package init(appId: UUID, integrationKey: String, platform: Platform) {
        self.appId = appId
        self.integrationKey = integrationKey
        self.platform = platform
    }
}

/// A valid request became a delivery: `push.delivery-events`, key = deliveryId.
/// Carries the checked request so that the delivery can be understood (and the analysts'
/// `deliveries` table rebuilt) from the topic alone. Version 2 names no recipient (erasure): a
/// `userKeys` audience and a proof's user keys and tokens are written as their counts
/// (`recipientsCounted`), since a topic record cannot be erased; the planner keeps the lists in
/// its own state (`push.delivery_plans.accepted`), which a person's erasure scrubs. Version 1
/// (the lists in clear) is still read, and counted by the projection.
package struct DeliveryAccepted: PushEvent, Hashable {
    package static let eventType = "DeliveryAccepted"
    package static let eventVersion = 2

    /// Used as `_dId` in every payload: letters and digits only (never a comma).
    package var deliveryId: String
    package var requestId: String
    package var serviceId: UUID
    package var serviceName: String
    package var apps: [DeliveryApp]
    package var audience: DeliveryRequest.Audience
    package var content: DeliveryRequest.Content
    package var validUntil: Date
    /// When fan-out may start (the acceptance time when the request had no `sendAt`).
    package var sendAt: Date
    package var throttlePerSecond: Int?
    package var acceptedAt: Date
    /// Set for a proof: only these recipients are targeted (absent for a delivery to the
    /// audience, and in events written before proofs existed).
    package var proof: DeliveryRequest.Proof?
    /// The template the content came from, with the version used (absent when the request named
    /// none). `content` is already the template's with the request's overrides: a template
    /// changed later does not change the delivery.
    package var template: DeliveryRequest.TemplateReference?
    /// The lane of the delivery's messages; absent in events written before lanes existed, which
    /// were all bulk (`lane`).
    package var priority: DeliveryPriority?

    /// The lane the delivery's messages take: its priority, bulk when it has none.
    package var lane: DeliveryPriority { priority ?? .default }

    /// The delivery as version 2 publishes it and `push.deliveries` keeps it: user keys and
    /// tokens replaced by their counts.
    package var recipientsCounted: DeliveryAccepted {
        var delivery = self
        delivery.audience = audience.counted
        delivery.proof = proof?.counted
        return delivery
    }

    package init(
        deliveryId: String, requestId: String, serviceId: UUID, serviceName: String, apps: [DeliveryApp],
        audience: DeliveryRequest.Audience, content: DeliveryRequest.Content, validUntil: Date, sendAt: Date,
        throttlePerSecond: Int?, acceptedAt: Date, proof: DeliveryRequest.Proof? = nil, template: DeliveryRequest.TemplateReference? = nil,
        priority: DeliveryPriority? = nil
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
        self.proof = proof
        self.template = template
        self.priority = priority
    }
}

/// A request was not accepted: `push.delivery-events`, key = requestId (or
/// `unreadable:<partition>:<offset>` when the record had none). The raw record is on
/// `push.delivery-requests.dlq` with the same reason.
package struct DeliveryRejected: PushEvent, Hashable {
    package static let eventType = "DeliveryRejected"
    package static let eventVersion = 1

    package var requestId: String?
    /// A sentence for a person, naming the field at fault.
    package var reason: String
    /// Where the rejected record is: topic, partition, offset.
    package var sourceTopic: String
    package var sourcePartition: Int32
    package var sourceOffset: Int64
    package var rejectedAt: Date

    package init(requestId: String?, reason: String, sourceTopic: String, sourcePartition: Int32, sourceOffset: Int64, rejectedAt: Date) {
        self.requestId = requestId
        self.reason = reason
        self.sourceTopic = sourceTopic
        self.sourcePartition = sourcePartition
        self.sourceOffset = sourceOffset
        self.rejectedAt = rejectedAt
    }
}

/// Fan-out of a delivery began (its `sendAt` was reached): `push.delivery-events`.
package struct DeliveryPlanningStarted: PushEvent, Hashable {
    package static let eventType = "DeliveryPlanningStarted"
    package static let eventVersion = 1

    package var deliveryId: String
    package var startedAt: Date

    package init(deliveryId: String, startedAt: Date) {
        self.deliveryId = deliveryId
        self.startedAt = startedAt
    }
}

/// Devices left out at targeting time (disabled or unsubscribed subscriptions):
/// `push.delivery-events`. Published once per fan-out chunk; may be repeated after a crash
/// (consumers deduplicate on delivery + app + token digest). Version 2 (the planner's since issue
/// 28) names each device by the SHA-256 of its token, never the token, so that the topic holds
/// nothing readable about an excluded device once its person is erased (docs/architecture.md,
/// "Erasure").
package struct DeliveryExclusionsRecorded: PushEvent, Hashable {
    package static let eventType = "DeliveryExclusionsRecorded"
    package static let eventVersion = 2

    package struct Exclusion: Codable, Sendable, Hashable {
        package var appId: UUID
        /// Lowercase hex SHA-256 of the registration token (`TokenDigest`,
        /// `push.subscriptions.token_digest`).
        package var tokenDigest: String
        package var platform: Platform
        /// e.g. `quarantined: Unregistered` for a token a provider declared invalid.
        package var reason: String

        package init(appId: UUID, tokenDigest: String, platform: Platform, reason: String) {
            self.appId = appId
            self.tokenDigest = tokenDigest
            self.platform = platform
            self.reason = reason
        }
    }

    package var deliveryId: String
    package var exclusions: [Exclusion]
    package var excludedAt: Date

    package init(deliveryId: String, exclusions: [Exclusion], excludedAt: Date) {
        self.deliveryId = deliveryId
        self.exclusions = exclusions
        self.excludedAt = excludedAt
    }
}

/// `DeliveryExclusionsRecorded` version 1, with each device's token in clear: written by the
/// planner before records were sealed, still read (old history on `push.delivery-events`, records already in
/// the planner's outbox), never written.
package struct DeliveryExclusionsRecordedV1: PushEvent, Hashable {
    package static let eventType = "DeliveryExclusionsRecorded"
    package static let eventVersion = 1

    package struct Exclusion: Codable, Sendable, Hashable {
        package var appId: UUID
        package var registrationToken: String
        package var platform: Platform
        package var reason: String

        package init(appId: UUID, registrationToken: String, platform: Platform, reason: String) {
            self.appId = appId
            self.registrationToken = registrationToken
            self.platform = platform
            self.reason = reason
        }
    }

    package var deliveryId: String
    package var exclusions: [Exclusion]
    package var excludedAt: Date

    package init(deliveryId: String, exclusions: [Exclusion], excludedAt: Date) {
        self.deliveryId = deliveryId
        self.exclusions = exclusions
        self.excludedAt = excludedAt
    }

    /// The same exclusions as version 2: each token replaced by its digest.
    package var upcast: DeliveryExclusionsRecorded {
        DeliveryExclusionsRecorded(
            deliveryId: deliveryId,
            exclusions: exclusions.map {
                .init(appId: $0.appId, tokenDigest: TokenDigest.of($0.registrationToken), platform: $0.platform, reason: $0.reason)
            },
            excludedAt: excludedAt)
    }
}

/// Every targeted device has its message (or its planning failure): `push.delivery-events`.
package struct DeliveryPlanned: PushEvent, Hashable {
    package static let eventType = "DeliveryPlanned"
    package static let eventVersion = 1

    package var deliveryId: String
    /// Messages created, one per (app, token) after exclusions; includes those that failed at
    /// planning.
    package var targeted: Int
    /// Devices excluded at targeting (disabled subscriptions).
    package var excluded: Int
    /// Of `targeted`, messages that ended `failed` at planning (payload too large, reserved key)
    /// instead of going to a sender.
    package var failed: Int
    package var plannedAt: Date

    package init(deliveryId: String, targeted: Int, excluded: Int, failed: Int, plannedAt: Date) {
        self.deliveryId = deliveryId
        self.targeted = targeted
        self.excluded = excluded
        self.failed = failed
        self.plannedAt = plannedAt
    }
}

/// An operator stopped a delivery (`POST /admin/v1/deliveries/{id}/cancel`):
/// `push.delivery-events`, key = deliveryId. The fan-out plans nothing more of it and the senders
/// end its messages not yet sent as `MessageCancelled`. Final: a cancelled delivery is not resumed.
package struct DeliveryCancelled: PushEvent, Hashable {
    package static let eventType = "DeliveryCancelled"
    package static let eventVersion = 1

    package var deliveryId: String
    package var cancelledAt: Date

    package init(deliveryId: String, cancelledAt: Date) {
        self.deliveryId = deliveryId
        self.cancelledAt = cancelledAt
    }
}

/// An operator held a delivery (`POST /admin/v1/deliveries/{id}/pause`): the fan-out stops after
/// its current chunk and the senders put its messages aside until `DeliveryResumed` (those whose
/// `validUntil` passes meanwhile end `expired`).
package struct DeliveryPaused: PushEvent, Hashable {
    package static let eventType = "DeliveryPaused"
    package static let eventVersion = 1

    package var deliveryId: String
    package var pausedAt: Date

    package init(deliveryId: String, pausedAt: Date) {
        self.deliveryId = deliveryId
        self.pausedAt = pausedAt
    }
}

/// A paused delivery goes on (`POST /admin/v1/deliveries/{id}/resume`): fan-out and sends
/// continue where they stopped.
package struct DeliveryResumed: PushEvent, Hashable {
    package static let eventType = "DeliveryResumed"
    package static let eventVersion = 1

    package var deliveryId: String
    package var resumedAt: Date

    package init(deliveryId: String, resumedAt: Date) {
        self.deliveryId = deliveryId
        self.resumedAt = resumedAt
    }
}
