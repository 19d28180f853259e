import Foundation

// The planned messages' Codable form (the decoder that names a malformed record's problem, and
// `EventJSONTests`' reference for the hand-written JSON): a sealed record (version 2) writes
// `subjectId`, `tokenDigest` and `sealed` in place of the token and the content.

private enum PlannedMessageKeys: String, CodingKey {
    case messageId, broadLogId, deliveryId, appId, registrationToken, environment, credential, topic, pushType, priority, collapseId
    case payload, projectId, message, validUntil, attempt, plannedAt, notBefore, throttlePerSecond, subjectId, tokenDigest, sealed, language, variant
}

extension KeyedDecodingContainer<PlannedMessageKeys> {
    /// The sealing when the record has one; else nil (then the token and content are required).
    fileprivate func sealing() throws -> MessageSealing? {
        guard let sealed = try decodeIfPresent(String.self, forKey: .sealed) else { return nil }
        return MessageSealing(
            subjectId: try decode(UUID.self, forKey: .subjectId), tokenDigest: try decode(String.self, forKey: .tokenDigest), sealed: sealed)
    }

    fileprivate func clear(_ key: PlannedMessageKeys, sealed: Bool) throws -> String {
        sealed ? "" : try decode(String.self, forKey: key)
    }
}

extension KeyedEncodingContainer<PlannedMessageKeys> {
    fileprivate mutating func encode(token: String, content: String, as contentKey: PlannedMessageKeys, sealing: MessageSealing?) throws {
        if let sealing {
            try encode(sealing.subjectId, forKey: .subjectId)
            try encode(sealing.tokenDigest, forKey: .tokenDigest)
            try encode(sealing.sealed, forKey: .sealed)
        } else {
            try encode(token, forKey: .registrationToken)
            try encode(content, forKey: contentKey)
        }
    }
}

/// The members both planned messages have, encoded by one function.
private protocol SharedPlannedMembers: SealableMessage {
    var broadLogId: Int32? { get }
    var deliveryId: String { get }
    var appId: UUID { get }
    var credential: CredentialReference? { get }
    var validUntil: Date { get }
    var attempt: Int { get }
    var plannedAt: Date { get }
    var notBefore: Date? { get }
    var throttlePerSecond: Int? { get }
    var language: String? { get }
    var variant: String? { get }
}

extension SharedPlannedMembers {
    func encodeShared(to c: inout KeyedEncodingContainer<PlannedMessageKeys>, contentKey: PlannedMessageKeys) throws {
        try c.encode(messageId, forKey: .messageId)
        try c.encodeIfPresent(broadLogId, forKey: .broadLogId)
        try c.encode(deliveryId, forKey: .deliveryId)
        try c.encode(appId, forKey: .appId)
        try c.encodeIfPresent(credential, forKey: .credential)
        try c.encode(validUntil, forKey: .validUntil)
        try c.encode(attempt, forKey: .attempt)
        try c.encode(plannedAt, forKey: .plannedAt)
        try c.encodeIfPresent(notBefore, forKey: .notBefore)
        try c.encodeIfPresent(throttlePerSecond, forKey: .throttlePerSecond)
        try c.encodeIfPresent(language, forKey: .language)
        try c.encodeIfPresent(variant, forKey: .variant)
        try c.encode(token: registrationToken, content: content, as: contentKey, sealing: sealing)
    }
}

extension APNSMessagePlanned: SharedPlannedMembers {}
extension FCMMessagePlanned: SharedPlannedMembers {}

extension APNSMessagePlanned {
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: PlannedMessageKeys.self)
        let sealing = try c.sealing()
        self.init(
            messageId: try c.decode(UUID.self, forKey: .messageId), broadLogId: try c.decodeIfPresent(Int32.self, forKey: .broadLogId),
            deliveryId: try c.decode(String.self, forKey: .deliveryId), appId: try c.decode(UUID.self, forKey: .appId),
            registrationToken: try c.clear(.registrationToken, sealed: sealing != nil), environment: try c.decode(String.self, forKey: .environment),
            credential: try c.decodeIfPresent(CredentialReference.self, forKey: .credential), topic: try c.decode(String.self, forKey: .topic),
            pushType: try c.decode(String.self, forKey: .pushType), priority: try c.decode(Int.self, forKey: .priority),
            collapseId: try c.decodeIfPresent(String.self, forKey: .collapseId), payload: try c.clear(.payload, sealed: sealing != nil),
            validUntil: try c.decode(Date.self, forKey: .validUntil), attempt: try c.decode(Int.self, forKey: .attempt),
            plannedAt: try c.decode(Date.self, forKey: .plannedAt), notBefore: try c.decodeIfPresent(Date.self, forKey: .notBefore),
            throttlePerSecond: try c.decodeIfPresent(Int.self, forKey: .throttlePerSecond), sealing: sealing,
            language: try c.decodeIfPresent(String.self, forKey: .language),
            variant: try c.decodeIfPresent(String.self, forKey: .variant))
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PlannedMessageKeys.self)
        try c.encode(environment, forKey: .environment)
        try c.encode(topic, forKey: .topic)
        try c.encode(pushType, forKey: .pushType)
        try c.encode(priority, forKey: .priority)
        try c.encodeIfPresent(collapseId, forKey: .collapseId)
        try encodeShared(to: &c, contentKey: .payload)
    }
}

extension FCMMessagePlanned {
    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: PlannedMessageKeys.self)
        let sealing = try c.sealing()
        self.init(
            messageId: try c.decode(UUID.self, forKey: .messageId), broadLogId: try c.decodeIfPresent(Int32.self, forKey: .broadLogId),
            deliveryId: try c.decode(String.self, forKey: .deliveryId), appId: try c.decode(UUID.self, forKey: .appId),
            registrationToken: try c.clear(.registrationToken, sealed: sealing != nil), projectId: try c.decode(String.self, forKey: .projectId),
            credential: try c.decodeIfPresent(CredentialReference.self, forKey: .credential), message: try c.clear(.message, sealed: sealing != nil),
            validUntil: try c.decode(Date.self, forKey: .validUntil), attempt: try c.decode(Int.self, forKey: .attempt),
            plannedAt: try c.decode(Date.self, forKey: .plannedAt), notBefore: try c.decodeIfPresent(Date.self, forKey: .notBefore),
            throttlePerSecond: try c.decodeIfPresent(Int.self, forKey: .throttlePerSecond), sealing: sealing,
            language: try c.decodeIfPresent(String.self, forKey: .language),
            variant: try c.decodeIfPresent(String.self, forKey: .variant))
    }

    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: PlannedMessageKeys.self)
        try c.encode(projectId, forKey: .projectId)
        try encodeShared(to: &c, contentKey: .message)
    }
}
