/// The `reason` of an APNs error answer. Every documented reason is a static constant; any other
/// string is kept as is, so decoding never fails when Apple adds one.
public struct APNSReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    public var description: String { self.rawValue.isEmpty ? "(no reason)" : self.rawValue }

    /// Whether this is one of the reasons Apple documents.
    public var isDocumented: Bool { Self.documented.contains(self) }

    // 400
    public static let badDeviceToken = APNSReason(rawValue: "BadDeviceToken")
    public static let deviceTokenNotForTopic = APNSReason(rawValue: "DeviceTokenNotForTopic")
    public static let badCollapseId = APNSReason(rawValue: "BadCollapseId")
    public static let badExpirationDate = APNSReason(rawValue: "BadExpirationDate")
    public static let badMessageId = APNSReason(rawValue: "BadMessageId")
    public static let badPriority = APNSReason(rawValue: "BadPriority")
    public static let badTopic = APNSReason(rawValue: "BadTopic")
    public static let duplicateHeaders = APNSReason(rawValue: "DuplicateHeaders")
    public static let idleTimeout = APNSReason(rawValue: "IdleTimeout")
    public static let invalidPushType = APNSReason(rawValue: "InvalidPushType")
    public static let missingDeviceToken = APNSReason(rawValue: "MissingDeviceToken")
    public static let missingTopic = APNSReason(rawValue: "MissingTopic")
    public static let payloadEmpty = APNSReason(rawValue: "PayloadEmpty")
    public static let topicDisallowed = APNSReason(rawValue: "TopicDisallowed")
    // 403
    public static let badCertificate = APNSReason(rawValue: "BadCertificate")
    public static let badCertificateEnvironment = APNSReason(rawValue: "BadCertificateEnvironment")
    public static let expiredProviderToken = APNSReason(rawValue: "ExpiredProviderToken")
    public static let forbidden = APNSReason(rawValue: "Forbidden")
    public static let invalidProviderToken = APNSReason(rawValue: "InvalidProviderToken")
    public static let missingProviderToken = APNSReason(rawValue: "MissingProviderToken")
    public static let unrelatedKeyIdInToken = APNSReason(rawValue: "UnrelatedKeyIdInToken")
    public static let badEnvironmentKeyIdInToken = APNSReason(rawValue: "BadEnvironmentKeyIdInToken")
    // 404, 405
    public static let badPath = APNSReason(rawValue: "BadPath")
    public static let methodNotAllowed = APNSReason(rawValue: "MethodNotAllowed")
    // 410
    public static let expiredToken = APNSReason(rawValue: "ExpiredToken")
    public static let unregistered = APNSReason(rawValue: "Unregistered")
    // 413
    public static let payloadTooLarge = APNSReason(rawValue: "PayloadTooLarge")
    // 429
    public static let tooManyProviderTokenUpdates = APNSReason(rawValue: "TooManyProviderTokenUpdates")
    public static let tooManyRequests = APNSReason(rawValue: "TooManyRequests")
    // 500, 503
    public static let internalServerError = APNSReason(rawValue: "InternalServerError")
    public static let serviceUnavailable = APNSReason(rawValue: "ServiceUnavailable")
    public static let shutdown = APNSReason(rawValue: "Shutdown")

    /// Every reason Apple documents.
    public static let documented: Set<APNSReason> = [
        .badDeviceToken, .deviceTokenNotForTopic, .badCollapseId, .badExpirationDate, .badMessageId, .badPriority,
        .badTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken, .missingTopic,
        .payloadEmpty, .topicDisallowed, .badCertificate, .badCertificateEnvironment, .expiredProviderToken,
        .forbidden, .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken,
        .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed, .expiredToken, .unregistered,
        .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests, .internalServerError,
        .serviceUnavailable, .shutdown,
    ]
}
