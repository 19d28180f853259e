import Foundation
import PushEvents

/// Checks a `push.delivery-requests` record against contract version 1
/// (docs/delivery-requests.md) and turns it into a `DeliveryAccepted`.
///
/// `parse` reads the envelope (a JSON object, the type, the version, the requestId);
/// `validate` checks the rest step by step, in the order the steps are called (the first
/// broken rule is the one the rejection names). The steps are in
/// `DeliveryRequestValidator+Rules.swift`.
package enum DeliveryRequestValidator {
    /// Values the contract bounds (documented with the contract).
    package enum Limits {
        package static let requestIdLength = 1...200
        package static let userKeys = 1...100_000
        package static let whereConditions = 1...20
        package static let textBytes = 4096
        package static let defaultValidity: TimeInterval = 24 * 3600
        /// FCM keeps a message at most 28 days (`ttl` ≤ 2,419,200 s).
        package static let maximumValidity: TimeInterval = 2_419_200
        package static let throttle = 1...1_000_000
        package static let collapseIdBytes = 64
        package static let proofRecipients = 1...100
        /// Tags in `content.languages`.
        package static let languages = 1...50
        /// Variants in `content.variants`.
        package static let variants = 2...5
    }

    static let interruptionLevels: Set<String> = ["passive", "active", "time-sensitive", "critical"]

    /// Reads the record's JSON. A record that is not a JSON object, or whose fields have the
    /// wrong types, is rejected with the field named.
    package static func parse(_ bytes: [UInt8]) throws(DeliveryRejection) -> DeliveryRequest {
        let data = Data(bytes)
        let requestId = (try? JSONSerialization.jsonObject(with: data) as? [String: Any])?["requestId"] as? String
        let readableId = requestId.flatMap { Limits.requestIdLength.contains($0.count) ? $0 : nil }
        guard let object = try? JSONSerialization.jsonObject(with: data), object is [String: Any] else {
            throw DeliveryRejection(requestId: nil, reason: "the record is not a JSON object")
        }
        let request: DeliveryRequest
        do {
            request = try EventJSON.decoder.decode(DeliveryRequest.self, from: data)
        } catch {
            throw DeliveryRejection(requestId: readableId, reason: EventDecoder<Never>.describe(error))
        }
        try checkEnvelope(request, readableId: readableId)
        return request
    }

    /// Checks the request against the catalog and the clock: the service and its apps, the
    /// audience, the content (texts, templates, each platform's options), the apps' provider
    /// settings, then the schedule, the throttle and the priority. `deliveryId` is the id the intake allocated
    /// for the request (`DeliveryIds`).
    package static func validate(_ request: DeliveryRequest, service: PlanningService?, now: Date, deliveryId: String) throws(DeliveryRejection)
        -> DeliveryAccepted
    {
        guard let service else { throw rejection(request, "unknown service '\(request.service.prefix(64))'") }
        let apps = try targetedApps(of: request, in: service)
        try checkAudience(of: request)
        let filter = try checkedFilter(of: request, apps: apps)
        try checkTexts(of: request, apps: apps)
        try checkTemplates(of: request, apps: apps)
        try checkIOSOptions(of: request, apps: apps)
        try checkAndroidOptions(of: request, apps: apps)
        try checkProviderSettings(of: request, apps: apps)
        let schedule = try schedule(of: request, now: now)
        try checkThrottle(of: request)
        let lane = try priority(of: request)
        try checkProof(of: request)

        return DeliveryAccepted(
            deliveryId: deliveryId,
            requestId: request.requestId,
            serviceId: service.serviceId,
            serviceName: service.name,
            apps: apps.map(\.reference),
            // Rebuilt from the request's own fields: the counts are the planner's, not a request's.
            audience: DeliveryRequest.Audience(
                all: request.audience.all, userKeys: request.audience.userKeys, where: request.audience.where, filter: filter,
                segment: request.audience.segment),
            content: request.content,
            validUntil: schedule.validUntil,
            sendAt: schedule.sendAt,
            throttlePerSecond: request.throttle?.perSecond,
            acceptedAt: now,
            proof: request.proof.map { DeliveryRequest.Proof(userKeys: $0.userKeys, registrationTokens: $0.registrationTokens) },
            priority: lane
        )
    }

    /// Every rule `request` breaks, in the order `validate` checks them (so the first is the
    /// reason `validate` gives): what the admin API answers for a request submitted over HTTP.
    /// Empty when `validate` would accept it. A rule that needs the targeted apps is skipped
    /// when the apps themselves are in error.
    package static func problems(of request: DeliveryRequest, service: PlanningService?, now: Date) -> [String] {
        guard let service else { return [rejection(request, "unknown service '\(request.service.prefix(64))'").reason] }
        var problems: [String] = []
        func check(_ rule: () throws -> Void) {
            do { try rule() } catch { problems.append((error as? DeliveryRejection)?.reason ?? "\(error)") }
        }
        var apps: [PlanningApp]?
        check { apps = try targetedApps(of: request, in: service) }
        check { try checkAudience(of: request) }
        if let apps {
            check { _ = try checkedFilter(of: request, apps: apps) }
            check { try checkTexts(of: request, apps: apps) }
            check { try checkTemplates(of: request, apps: apps) }
            check { try checkIOSOptions(of: request, apps: apps) }
        }
        check { try checkAndroidOptions(of: request, apps: apps ?? []) }
        if let apps { check { try checkProviderSettings(of: request, apps: apps) } }
        check { _ = try schedule(of: request, now: now) }
        check { try checkThrottle(of: request) }
        check { _ = try priority(of: request) }
        check { try checkProof(of: request) }
        return problems
    }
}
