/// FCM's `details[].errorCode` (the `google.firebase.fcm.v1.FcmError` detail). An open set:
/// values this type does not name are kept as they came.
package struct FCMErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    package var rawValue: String

    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// No more information is available about this error.
    package static let unspecifiedError = FCMErrorCode(rawValue: "UNSPECIFIED_ERROR")
    /// 400: the request or the message is malformed, or the registration token is not valid.
    package static let invalidArgument = FCMErrorCode(rawValue: "INVALID_ARGUMENT")
    /// 404: the token is no longer registered.
    package static let unregistered = FCMErrorCode(rawValue: "UNREGISTERED")
    /// 403: the token belongs to another sender (project).
    package static let senderIdMismatch = FCMErrorCode(rawValue: "SENDER_ID_MISMATCH")
    /// 429: a sending quota (project, device or topic) is spent.
    package static let quotaExceeded = FCMErrorCode(rawValue: "QUOTA_EXCEEDED")
    /// 503: the server is overloaded.
    package static let unavailable = FCMErrorCode(rawValue: "UNAVAILABLE")
    /// 500: an unknown internal error.
    package static let `internal` = FCMErrorCode(rawValue: "INTERNAL")
    /// 401: the APNs certificate or web push auth key uploaded to Firebase is invalid or missing.
    package static let thirdPartyAuthError = FCMErrorCode(rawValue: "THIRD_PARTY_AUTH_ERROR")

    package var description: String { self.rawValue }
}
