import Foundation

// Hand-written JSON for the events written or read once per notification (EventJSONWriter.swift,
// EventJSONReader.swift). Members are written in sorted key order, as `EventJSON.encoder` sorts
// them; `EventJSONTests` holds each type's bytes equal to its Codable encoding.

extension CredentialReference: EventJSONWritable, EventJSONReadable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.uuid("credentialId", credentialId)
        writer.string("fingerprint", fingerprint)
        writer.string("kind", kind)
    }

    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var credentialId: UUID?
        var kind: String?
        var fingerprint: String?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "credentialId": try EventJSONReader.once(&credentialId, try reader.uuid())
            case "kind": try EventJSONReader.once(&kind, try reader.string())
            case "fingerprint": try EventJSONReader.once(&fingerprint, try reader.string())
            default: try reader.skipValue()
            }
        }
        self.init(
            credentialId: try EventJSONReader.required(credentialId), kind: try EventJSONReader.required(kind),
            fingerprint: try EventJSONReader.required(fingerprint)
        )
    }
}

extension EventJSONReader {
    /// An optional nested credential: absent, null, or an object.
    mutating func optionalCredential() throws(Unsupported) -> CredentialReference? {
        try null() ? nil : try CredentialReference(reading: &self)
    }
}

extension APNSMessagePlanned: EventJSONWritable, EventJSONReadable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.uuid("appId", appId)
        writer.int("attempt", attempt)
        writer.int("broadLogId", broadLogId)
        writer.string("collapseId", collapseId)
        if let credential { writer.object("credential", credential.writeMembers) }
        writer.string("deliveryId", deliveryId)
        writer.string("environment", environment)
        writer.string("language", language)
        writer.uuid("messageId", messageId)
        writer.date("notBefore", notBefore)
        if sealing == nil { writer.string("payload", payload) }
        writer.date("plannedAt", plannedAt)
        writer.int("priority", priority)
        writer.string("pushType", pushType)
        if sealing == nil { writer.string("registrationToken", registrationToken) }
        if let sealing {
            writer.string("sealed", sealing.sealed)
            writer.uuid("subjectId", sealing.subjectId)
        }
        writer.int("throttlePerSecond", throttlePerSecond)
        if let sealing { writer.string("tokenDigest", sealing.tokenDigest) }
        writer.string("topic", topic)
        writer.date("validUntil", validUntil)
        writer.string("variant", variant)
    }

    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var common = PlannedMessageMembers()
        var environment: String?
        var topic: String?
        var pushType: String?
        var priority: Int?
        var collapseId: String??
        var payload: String?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "environment": try EventJSONReader.once(&environment, try reader.string())
            case "topic": try EventJSONReader.once(&topic, try reader.string())
            case "pushType": try EventJSONReader.once(&pushType, try reader.string())
            case "priority": try EventJSONReader.once(&priority, try reader.int())
            case "collapseId": try EventJSONReader.once(&collapseId, try reader.optionalString())
            case "payload": try EventJSONReader.once(&payload, try reader.string())
            default: try common.read(key, from: &reader)
            }
        }
        let sealing = try common.sealing()
        self.init(
            messageId: try common.messageId(), broadLogId: common.broadLogId ?? nil, deliveryId: try common.deliveryId(), appId: try common.appId(),
            registrationToken: try common.registrationToken(sealed: sealing != nil), environment: try EventJSONReader.required(environment),
            credential: common.credential ?? nil, topic: try EventJSONReader.required(topic),
            pushType: try EventJSONReader.required(pushType), priority: try EventJSONReader.required(priority),
            collapseId: collapseId ?? nil, payload: try PlannedMessageMembers.clear(payload, sealed: sealing != nil), validUntil: try common.validUntil(),
            attempt: try common.attempt(), plannedAt: try common.plannedAt(), notBefore: common.notBefore ?? nil,
            throttlePerSecond: common.throttlePerSecond(), sealing: sealing, language: common.language ?? nil,
            variant: common.variant ?? nil
        )
    }
}

extension FCMMessagePlanned: EventJSONWritable, EventJSONReadable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.uuid("appId", appId)
        writer.int("attempt", attempt)
        writer.int("broadLogId", broadLogId)
        if let credential { writer.object("credential", credential.writeMembers) }
        writer.string("deliveryId", deliveryId)
        writer.string("language", language)
        if sealing == nil { writer.string("message", message) }
        writer.uuid("messageId", messageId)
        writer.date("notBefore", notBefore)
        writer.date("plannedAt", plannedAt)
        writer.string("projectId", projectId)
        if sealing == nil { writer.string("registrationToken", registrationToken) }
        if let sealing {
            writer.string("sealed", sealing.sealed)
            writer.uuid("subjectId", sealing.subjectId)
        }
        writer.int("throttlePerSecond", throttlePerSecond)
        if let sealing { writer.string("tokenDigest", sealing.tokenDigest) }
        writer.date("validUntil", validUntil)
        writer.string("variant", variant)
    }

    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var common = PlannedMessageMembers()
        var projectId: String?
        var message: String?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "projectId": try EventJSONReader.once(&projectId, try reader.string())
            case "message": try EventJSONReader.once(&message, try reader.string())
            default: try common.read(key, from: &reader)
            }
        }
        let sealing = try common.sealing()
        self.init(
            messageId: try common.messageId(), broadLogId: common.broadLogId ?? nil, deliveryId: try common.deliveryId(), appId: try common.appId(),
            registrationToken: try common.registrationToken(sealed: sealing != nil), projectId: try EventJSONReader.required(projectId),
            credential: common.credential ?? nil, message: try PlannedMessageMembers.clear(message, sealed: sealing != nil),
            validUntil: try common.validUntil(), attempt: try common.attempt(), plannedAt: try common.plannedAt(),
            notBefore: common.notBefore ?? nil, throttlePerSecond: common.throttlePerSecond(), sealing: sealing, language: common.language ?? nil,
            variant: common.variant ?? nil
        )
    }
}

/// The members both planned messages have, read by either reader; other keys are skipped.
struct PlannedMessageMembers {
    typealias Unsupported = EventJSONReader.Unsupported

    private var messageIdValue: UUID?, deliveryIdValue: String?, appIdValue: UUID?, registrationTokenValue: String?
    private var validUntilValue: Date?, attemptValue: Int?, plannedAtValue: Date?
    /// Absent (nil), null or a value.
    private(set) var credential: CredentialReference??, notBefore: Date??, broadLogId: Int32??, language: String??, variant: String??
    private var throttlePerSecondValue: Int32??
    private var subjectIdValue: UUID?, tokenDigestValue: String?, sealedValue: String?

    mutating func read(_ key: EventJSONReader.Key, from reader: inout EventJSONReader) throws(Unsupported) {
        switch key {
        case "messageId": try EventJSONReader.once(&messageIdValue, try reader.uuid())
        case "broadLogId": try EventJSONReader.once(&broadLogId, try reader.optionalInt32())
        case "deliveryId": try EventJSONReader.once(&deliveryIdValue, try reader.string())
        case "appId": try EventJSONReader.once(&appIdValue, try reader.uuid())
        case "registrationToken": try EventJSONReader.once(&registrationTokenValue, try reader.string())
        case "credential": try EventJSONReader.once(&credential, try reader.optionalCredential())
        case "validUntil": try EventJSONReader.once(&validUntilValue, try reader.date())
        case "attempt": try EventJSONReader.once(&attemptValue, try reader.int())
        case "plannedAt": try EventJSONReader.once(&plannedAtValue, try reader.date())
        case "notBefore": try EventJSONReader.once(&notBefore, try reader.optionalDate())
        case "throttlePerSecond": try EventJSONReader.once(&throttlePerSecondValue, try reader.optionalInt32())
        case "subjectId": try EventJSONReader.once(&subjectIdValue, try reader.uuid())
        case "tokenDigest": try EventJSONReader.once(&tokenDigestValue, try reader.string())
        case "sealed": try EventJSONReader.once(&sealedValue, try reader.string())
        case "language": try EventJSONReader.once(&language, try reader.optionalString())
        case "variant": try EventJSONReader.once(&variant, try reader.optionalString())
        default: try reader.skipValue()
        }
    }

    func messageId() throws(Unsupported) -> UUID { try EventJSONReader.required(messageIdValue) }
    func deliveryId() throws(Unsupported) -> String { try EventJSONReader.required(deliveryIdValue) }
    func appId() throws(Unsupported) -> UUID { try EventJSONReader.required(appIdValue) }
    /// The token: required in clear, empty (until opened) in a sealed record.
    func registrationToken(sealed: Bool) throws(Unsupported) -> String { sealed ? "" : try EventJSONReader.required(registrationTokenValue) }
    /// A content member: required in clear, empty (until opened) in a sealed record.
    static func clear(_ value: String?, sealed: Bool) throws(Unsupported) -> String { sealed ? "" : try EventJSONReader.required(value) }
    /// The sealing of a version-2 record (`sealed` present: `subjectId` and `tokenDigest` required).
    func sealing() throws(Unsupported) -> MessageSealing? {
        guard let sealedValue else { return nil }
        return MessageSealing(
            subjectId: try EventJSONReader.required(subjectIdValue), tokenDigest: try EventJSONReader.required(tokenDigestValue), sealed: sealedValue)
    }
    func validUntil() throws(Unsupported) -> Date { try EventJSONReader.required(validUntilValue) }
    func attempt() throws(Unsupported) -> Int { try EventJSONReader.required(attemptValue) }
    func plannedAt() throws(Unsupported) -> Date { try EventJSONReader.required(plannedAtValue) }
    /// Absent or null: unthrottled. (A value under 1 is read as written; the sender fails such
    /// a message, reason `invalid-throttle`.)
    func throttlePerSecond() -> Int? {
        (throttlePerSecondValue ?? nil).map(Int.init)
    }
}

extension MessageReference: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.uuid("appId", appId)
        writer.int("broadLogId", broadLogId)
        writer.string("deliveryId", deliveryId)
        writer.string("language", language)
        writer.uuid("messageId", messageId)
        writer.date("plannedAt", plannedAt)
        writer.string("platform", platform.rawValue)
        writer.string("tokenDigest", tokenDigest)
        writer.string("variant", variant)
    }
}

extension MessageSent: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.int("attempts", attempts)
        writer.object("message", message.writeMembers)
        writer.string("providerMessageId", providerMessageId)
        writer.date("sentAt", sentAt)
    }
}

extension MessageFailed: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.int("attempts", attempts)
        writer.date("failedAt", failedAt)
        writer.string("failureType", failureType)
        writer.object("message", message.writeMembers)
        writer.string("reason", reason)
    }
}

extension MessageExpired: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.int("attempts", attempts)
        writer.date("expiredAt", expiredAt)
        writer.object("message", message.writeMembers)
    }
}

extension MessageCancelled: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.int("attempts", attempts)
        writer.date("cancelledAt", cancelledAt)
        writer.object("message", message.writeMembers)
    }
}

extension SubscriptionDisabled: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.uuid("appId", appId)
        writer.date("invalidSince", invalidSince)
        writer.string("reason", reason)
        writer.string("tokenDigest", tokenDigest)
    }
}

extension TrackingHitRecorded: EventJSONWritable {
    package func writeMembers(to writer: inout EventJSONWriter) {
        writer.string("deliveryId", deliveryId)
        writer.string("kind", kind)
        writer.string("messageId", messageId)
        writer.string("messageIdForm", messageIdForm)
        writer.date("occurredAt", occurredAt)
        writer.int("tagId", Int(tagId))
        writer.uuid("trackingId", trackingId)
    }
}

// Readers of the result events and the tracking hit: the projections read one per message
// (`push.broad_log`, `push.tracking_log`).

extension MessageReference: EventJSONReadable {
    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var messageId: UUID?
        var broadLogId: Int32??
        var deliveryId: String?
        var appId: UUID?
        var tokenDigest: String?
        var registrationToken: String?
        var platform: String?
        var plannedAt: Date?
        var language: String??
        var variant: String??
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "messageId": try EventJSONReader.once(&messageId, try reader.uuid())
            case "language": try EventJSONReader.once(&language, try reader.optionalString())
            case "variant": try EventJSONReader.once(&variant, try reader.optionalString())
            case "plannedAt": try EventJSONReader.once(&plannedAt, try reader.date())
            case "broadLogId": try EventJSONReader.once(&broadLogId, try reader.optionalInt32())
            case "deliveryId": try EventJSONReader.once(&deliveryId, try reader.string())
            case "appId": try EventJSONReader.once(&appId, try reader.uuid())
            case "tokenDigest": try EventJSONReader.once(&tokenDigest, try reader.string())
            // Version 1 results: the token in clear, read as its digest.
            case "registrationToken": try EventJSONReader.once(&registrationToken, try reader.string())
            case "platform": try EventJSONReader.once(&platform, try reader.string())
            default: try reader.skipValue()
            }
        }
        let digest: String
        if let tokenDigest { digest = tokenDigest } else { digest = TokenDigest.of(try EventJSONReader.required(registrationToken)) }
        // A platform the enum does not have is the decoder's to name.
        guard let platform = Platform(rawValue: try EventJSONReader.required(platform)) else { throw EventJSONReader.Unsupported() }
        self.init(
            messageId: try EventJSONReader.required(messageId), broadLogId: broadLogId ?? nil, deliveryId: try EventJSONReader.required(deliveryId),
            appId: try EventJSONReader.required(appId), tokenDigest: digest, platform: platform, plannedAt: plannedAt, language: language ?? nil,
            variant: variant ?? nil)
    }
}

/// The members every result event has; each reader adds its own.
private struct ResultMembers {
    typealias Unsupported = EventJSONReader.Unsupported

    var message: MessageReference?
    var attempts: Int?

    /// Reads `key` when it is a shared member; false (nothing read) otherwise.
    mutating func read(_ key: EventJSONReader.Key, from reader: inout EventJSONReader) throws(Unsupported) -> Bool {
        switch key {
        case "message": try EventJSONReader.once(&message, try MessageReference(reading: &reader))
        case "attempts": try EventJSONReader.once(&attempts, try reader.int())
        default: return false
        }
        return true
    }
}

extension MessageSent: EventJSONReadable {
    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var common = ResultMembers()
        var providerMessageId: String?
        var sentAt: Date?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "providerMessageId": try EventJSONReader.once(&providerMessageId, try reader.string())
            case "sentAt": try EventJSONReader.once(&sentAt, try reader.date())
            default: if try !common.read(key, from: &reader) { try reader.skipValue() }
            }
        }
        self.init(
            message: try EventJSONReader.required(common.message), providerMessageId: try EventJSONReader.required(providerMessageId),
            attempts: try EventJSONReader.required(common.attempts), sentAt: try EventJSONReader.required(sentAt))
    }
}

extension MessageFailed: EventJSONReadable {
    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var common = ResultMembers()
        var failureType: String?
        var reason: String?
        var failedAt: Date?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "failureType": try EventJSONReader.once(&failureType, try reader.string())
            case "reason": try EventJSONReader.once(&reason, try reader.string())
            case "failedAt": try EventJSONReader.once(&failedAt, try reader.date())
            default: if try !common.read(key, from: &reader) { try reader.skipValue() }
            }
        }
        self.init(
            message: try EventJSONReader.required(common.message), failureType: try EventJSONReader.required(failureType),
            reason: try EventJSONReader.required(reason), attempts: try EventJSONReader.required(common.attempts),
            failedAt: try EventJSONReader.required(failedAt))
    }
}

extension MessageExpired: EventJSONReadable {
    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var common = ResultMembers()
        var expiredAt: Date?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "expiredAt": try EventJSONReader.once(&expiredAt, try reader.date())
            default: if try !common.read(key, from: &reader) { try reader.skipValue() }
            }
        }
        self.init(
            message: try EventJSONReader.required(common.message), attempts: try EventJSONReader.required(common.attempts),
            expiredAt: try EventJSONReader.required(expiredAt))
    }
}

extension MessageCancelled: EventJSONReadable {
    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var common = ResultMembers()
        var cancelledAt: Date?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "cancelledAt": try EventJSONReader.once(&cancelledAt, try reader.date())
            default: if try !common.read(key, from: &reader) { try reader.skipValue() }
            }
        }
        self.init(
            message: try EventJSONReader.required(common.message), attempts: try EventJSONReader.required(common.attempts),
            cancelledAt: try EventJSONReader.required(cancelledAt))
    }
}

extension TrackingHitRecorded: EventJSONReadable {
    package init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) {
        var trackingId: UUID?
        var messageId: String?
        var messageIdForm: String?
        var deliveryId: String?
        var tagId: Int32?
        var kind: String?
        var occurredAt: Date?
        try reader.members { reader, key throws(EventJSONReader.Unsupported) in
            switch key {
            case "trackingId": try EventJSONReader.once(&trackingId, try reader.uuid())
            case "messageId": try EventJSONReader.once(&messageId, try reader.string())
            case "messageIdForm": try EventJSONReader.once(&messageIdForm, try reader.string())
            case "deliveryId": try EventJSONReader.once(&deliveryId, try reader.string())
            case "tagId":
                guard let tag = Int32(exactly: try reader.int()) else { throw EventJSONReader.Unsupported() }
                try EventJSONReader.once(&tagId, tag)
            case "kind": try EventJSONReader.once(&kind, try reader.string())
            case "occurredAt": try EventJSONReader.once(&occurredAt, try reader.date())
            default: try reader.skipValue()
            }
        }
        self.init(
            trackingId: try EventJSONReader.required(trackingId), messageId: try EventJSONReader.required(messageId),
            messageIdForm: try EventJSONReader.required(messageIdForm), deliveryId: try EventJSONReader.required(deliveryId),
            tagId: try EventJSONReader.required(tagId), kind: try EventJSONReader.required(kind), occurredAt: try EventJSONReader.required(occurredAt))
    }
}
