/// FCM's `details[].errorCode` (the `google.firebase.fcm.v1.FcmError` detail). An open set:
/// values this type does not name are kept as they came.
public struct FCMErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// No more information is available about this error.
    public static let unspecifiedError = FCMErrorCode(rawValue: "UNSPECIFIED_ERROR")
    /// 400: the request or the message is malformed, or the registration token is not valid.
    public static let invalidArgument = FCMErrorCode(rawValue: "INVALID_ARGUMENT")
    /// 404: the token is no longer registered.
    public static let unregistered = FCMErrorCode(rawValue: "UNREGISTERED")
    /// 403: the token belongs to another sender (project).
    public static let senderIdMismatch = FCMErrorCode(rawValue: "SENDER_ID_MISMATCH")
    /// 429: a sending quota (project, device or topic) is spent.
    public static let quotaExceeded = FCMErrorCode(rawValue: "QUOTA_EXCEEDED")
    /// 503: the server is overloaded.
    public static let unavailable = FCMErrorCode(rawValue: "UNAVAILABLE")
    /// 500: an unknown internal error.
    public static let `internal` = FCMErrorCode(rawValue: "INTERNAL")
    /// 401: the APNs certificate or web push auth key uploaded to Firebase is invalid or missing.
    public static let thirdPartyAuthError = FCMErrorCode(rawValue: "THIRD_PARTY_AUTH_ERROR")

    public var description: String { self.rawValue }
}
