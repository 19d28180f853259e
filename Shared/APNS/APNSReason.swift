/// The `reason` of an APNs error answer. Every documented reason is a static constant; any other
/// string is kept as is, so decoding never fails when Apple adds one.
package struct APNSReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    package var description: String { self.rawValue.isEmpty ? "(no reason)" : self.rawValue }

    /// Whether this is one of the reasons Apple documents.
    package var isDocumented: Bool { Self.documented.contains(self) }

    // 400
    package static let badDeviceToken = APNSReason(rawValue: "BadDeviceToken")
    package static let deviceTokenNotForTopic = APNSReason(rawValue: "DeviceTokenNotForTopic")
    package static let badCollapseId = APNSReason(rawValue: "BadCollapseId")
    package static let badExpirationDate = APNSReason(rawValue: "BadExpirationDate")
    package static let badMessageId = APNSReason(rawValue: "BadMessageId")
    package static let badPriority = APNSReason(rawValue: "BadPriority")
    package static let badTopic = APNSReason(rawValue: "BadTopic")
    package static let duplicateHeaders = APNSReason(rawValue: "DuplicateHeaders")
    package static let idleTimeout = APNSReason(rawValue: "IdleTimeout")
    package static let invalidPushType = APNSReason(rawValue: "InvalidPushType")
    package static let missingDeviceToken = APNSReason(rawValue: "MissingDeviceToken")
    package static let missingTopic = APNSReason(rawValue: "MissingTopic")
    package static let payloadEmpty = APNSReason(rawValue: "PayloadEmpty")
    package static let topicDisallowed = APNSReason(rawValue: "TopicDisallowed")
    // 403
    package static let badCertificate = APNSReason(rawValue: "BadCertificate")
    package static let badCertificateEnvironment = APNSReason(rawValue: "BadCertificateEnvironment")
    package static let expiredProviderToken = APNSReason(rawValue: "ExpiredProviderToken")
    package static let forbidden = APNSReason(rawValue: "Forbidden")
    package static let invalidProviderToken = APNSReason(rawValue: "InvalidProviderToken")
    package static let missingProviderToken = APNSReason(rawValue: "MissingProviderToken")
    package static let unrelatedKeyIdInToken = APNSReason(rawValue: "UnrelatedKeyIdInToken")
    package static let badEnvironmentKeyIdInToken = APNSReason(rawValue: "BadEnvironmentKeyIdInToken")
    // 404, 405
    package static let badPath = APNSReason(rawValue: "BadPath")
    package static let methodNotAllowed = APNSReason(rawValue: "MethodNotAllowed")
    // 410
    package static let expiredToken = APNSReason(rawValue: "ExpiredToken")
    package static let unregistered = APNSReason(rawValue: "Unregistered")
    // 413
    package static let payloadTooLarge = APNSReason(rawValue: "PayloadTooLarge")
    // 429
    package static let tooManyProviderTokenUpdates = APNSReason(rawValue: "TooManyProviderTokenUpdates")
    package static let tooManyRequests = APNSReason(rawValue: "TooManyRequests")
    // 500, 503
    package static let internalServerError = APNSReason(rawValue: "InternalServerError")
    package static let serviceUnavailable = APNSReason(rawValue: "ServiceUnavailable")
    package static let shutdown = APNSReason(rawValue: "Shutdown")

    /// Every reason Apple documents.
    package static let documented: Set<APNSReason> = [
        .badDeviceToken, .deviceTokenNotForTopic, .badCollapseId, .badExpirationDate, .badMessageId, .badPriority,
        .badTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken, .missingTopic,
        .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment, .expiredProviderToken,
        .forbidden, .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken,
        .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed, .expiredToken, .unregistered,
        .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError,
        .serviceUnavailable, .shutdown,
    ]
}
