import Crypto
import Foundation
import PushEvents

/// Why a delivery request was not accepted: a sentence for the person who wrote the request.
package struct DeliveryRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request's id when it could be read.
    package var requestId: String?
    package var reason: String

    package init(requestId: String?, reason: String) {
        self.requestId = requestId
        self.reason = reason
    }

    package var description: String { reason }
}

/// Checks a `push.delivery-requests` record against contract version 1
/// (docs/delivery-requests.md) and turns it into a `DeliveryAccepted`.
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
        guard request.type == "DeliveryRequested" else {
            throw DeliveryRejection(requestId: readableId, reason: "type must be DeliveryRequested")
        }
        guard request.version == 1 else {
            throw DeliveryRejection(requestId: readableId, reason: "version \(request.version) is not supported; this planner reads version 1")
        }
        guard Limits.requestIdLength.contains(request.requestId.count),
              request.requestId.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value != 0x7F })
        else {
            throw DeliveryRejection(requestId: nil, reason: "requestId must be 1 to 200 printable characters without spaces")
        }
        return request
    }

    /// The delivery id of a request: a stable function of the requestId, so that replaying the
    /// request topic reproduces it. 20 lowercase hex digits (used as `_dId`: never a comma).
    package static func deliveryId(forRequestId requestId: String) -> String {
        let digest = SHA256.hash(data: Array("push-delivery:\(requestId)".utf8))
        return digest.prefix(10).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }

    /// Checks the request against the catalog and the clock.
    package static func validate(_ request: DeliveryRequest, service: PlanningService?, now: Date) throws(DeliveryRejection) -> DeliveryAccepted {
        func reject(_ reason: String) -> DeliveryRejection { DeliveryRejection(requestId: request.requestId, reason: reason) }

        guard let service else { throw reject("unknown service '\(request.service.prefix(64))'") }
        // Apps
        var apps = service.apps
        if let keys = request.apps {
            guard !keys.isEmpty else { throw reject("apps is empty: leave it out to target every app of the service") }
            var chosen: [PlanningApp] = []
            for key in keys {
                guard let app = service.apps.first(where: { $0.integrationKey == key }) else {
                    throw reject("unknown app '\(key.prefix(128))' in service '\(service.name)'")
                }
                if !chosen.contains(app) { chosen.append(app) }
            }
            apps = chosen
        }
        guard !apps.isEmpty else { throw reject("service '\(service.name)' has no apps") }

        // Audience: exactly one form, not empty.
        let audience = request.audience
        let forms = [audience.all != nil, audience.userKeys != nil, audience.where != nil].filter { $0 }.count
        guard forms == 1 else { throw reject("audience must have exactly one of all, userKeys, where") }
        if let all = audience.all, !all { throw reject("audience.all must be true (or use userKeys or where)") }
        if let keys = audience.userKeys {
            guard !keys.isEmpty else { throw reject("audience.userKeys is empty") }
            guard Limits.userKeys.contains(keys.count) else { throw reject("audience.userKeys has more than 100000 keys: use where, or split the request") }
        }
        if let conditions = audience.where {
            guard !conditions.isEmpty else { throw reject("audience.where is empty") }
            guard Limits.whereConditions.contains(conditions.count) else { throw reject("audience.where has more than 20 conditions") }
        }

        // Content
        let content = request.content
        let iosApps = apps.filter { $0.platform == .ios }
        for (field, text) in [("title", content.title), ("subtitle", content.subtitle), ("body", content.body)] {
            if let text, text.utf8.count > Limits.textBytes { throw reject("content.\(field) is longer than 4096 bytes") }
        }
        let body = content.body.flatMap { $0.isEmpty ? nil : $0 }
        if body == nil {
            if content.title != nil || content.subtitle != nil { throw reject("content.body is required when there is a title or subtitle") }
            if !iosApps.isEmpty, content.ios?.contentAvailable != true {
                throw reject("content.body is required unless the push is silent (ios.contentAvailable true and no alert text)")
            }
            if apps.contains(where: { $0.platform == .android }), (content.android?.mode ?? "data") != "data" {
                throw reject("content.body is required for an Android notification message (android.mode notification)")
            }
        }
        var templates: [(String, String)] = [("title", content.title ?? ""), ("subtitle", content.subtitle ?? ""), ("body", content.body ?? "")]
        let declared = apps.reduce(into: Set<String>()) { $0.formUnion($1.variables) }
        for (name, value) in (content.variables ?? [:]).sorted(by: { $0.key < $1.key }) {
            guard declared.contains(name) else {
                throw reject("variable '\(name.prefix(64))' is not declared by any targeted app (declared: \(declared.sorted().joined(separator: ", ")))")
            }
            templates.append(("variables.\(name)", value))
        }
        for (field, text) in templates {
            do {
                _ = try MessageTemplate(parsing: text)
            } catch {
                throw reject("content.\(field): \(error)")
            }
        }
        if let ios = content.ios {
            if let badge = ios.badge, badge < 0 { throw reject("content.ios.badge must be 0 or more") }
            if let level = ios.interruptionLevel, !interruptionLevels.contains(level) {
                throw reject("content.ios.interruptionLevel must be one of passive, active, time-sensitive, critical")
            }
            if let score = ios.relevanceScore, !(0...1).contains(score) { throw reject("content.ios.relevanceScore must be between 0 and 1") }
            if let collapseId = ios.collapseId, collapseId.utf8.count > Limits.collapseIdBytes || collapseId.isEmpty {
                throw reject("content.ios.collapseId must be 1 to 64 bytes")
            }
            if let sound = ios.sound, sound.isEmpty { throw reject("content.ios.sound must not be empty") }
        }
        if let android = content.android {
            if let mode = android.mode, mode != "data", mode != "notification" { throw reject("content.android.mode must be data or notification") }
            if let priority = android.priority, priority != "high", priority != "normal" { throw reject("content.android.priority must be high or normal") }
            if let key = android.collapseKey, key.isEmpty || key.utf8.count > 64 { throw reject("content.android.collapseKey must be 1 to 64 bytes") }
        }
        for app in iosApps where (app.bundleId ?? "").isEmpty {
            throw reject("iOS app '\(app.integrationKey)' has no bundleId (the APNs topic)")
        }
        for app in apps where app.platform == .android && (app.fcmProjectId ?? "").isEmpty {
            throw reject("Android app '\(app.integrationKey)' has no fcmProjectId")
        }

        // Dates and throttle
        let sendAt = max(request.sendAt ?? now, now)
        let validUntil = request.validUntil ?? sendAt.addingTimeInterval(Limits.defaultValidity)
        guard validUntil > now else { throw reject("validUntil is in the past") }
        guard validUntil > sendAt else { throw reject("validUntil must be after sendAt") }
        guard validUntil.timeIntervalSince(now) <= Limits.maximumValidity else {
            throw reject("validUntil is more than 28 days away (FCM keeps a message at most 28 days)")
        }
        if let throttle = request.throttle, !Limits.throttle.contains(throttle.perSecond) {
            throw reject("throttle.perSecond must be between 1 and 1000000")
        }

        return DeliveryAccepted(
            deliveryId: deliveryId(forRequestId: request.requestId),
            requestId: request.requestId,
            serviceId: service.serviceId,
            serviceName: service.name,
            apps: apps.map(\.reference),
            audience: audience,
            content: content,
            validUntil: validUntil,
            sendAt: sendAt,
            throttlePerSecond: request.throttle?.perSecond,
            acceptedAt: now
        )
    }
}
