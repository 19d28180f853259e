import PushWire

/// An FCM v1 error answer: Google's error envelope with an `FcmError` detail.
package struct FCMError: Sendable, Error {
    /// FCM's `details[].errorCode` values, with the HTTP status and Google status they come with.
    package struct Code: Sendable, Hashable {
        package var errorCode: String
        package var httpStatus: Int
        package var status: String

        package static let unregistered = Code(errorCode: "UNREGISTERED", httpStatus: 404, status: "NOT_FOUND")
        package static let senderIDMismatch = Code(errorCode: "SENDER_ID_MISMATCH", httpStatus: 403, status: "PERMISSION_DENIED")
        package static let invalidArgument = Code(errorCode: "INVALID_ARGUMENT", httpStatus: 400, status: "INVALID_ARGUMENT")
        package static let quotaExceeded = Code(errorCode: "QUOTA_EXCEEDED", httpStatus: 429, status: "RESOURCE_EXHAUSTED")
        package static let unavailable = Code(errorCode: "UNAVAILABLE", httpStatus: 503, status: "UNAVAILABLE")
        package static let `internal` = Code(errorCode: "INTERNAL", httpStatus: 500, status: "INTERNAL")
        package static let thirdPartyAuthError = Code(errorCode: "THIRD_PARTY_AUTH_ERROR", httpStatus: 401, status: "UNAUTHENTICATED")

        package static let all: [Code] = [
            .unregistered, .senderIDMismatch, .invalidArgument, .quotaExceeded, .unavailable, .internal, .thirdPartyAuthError,
        ]

        /// The code for an injected failure: by errorCode name, else by HTTP status.
        package static func forFault(status: Int, errorCode: String?) -> Code {
            if let errorCode, let match = all.first(where: { $0.errorCode == errorCode }) { return match }
            return all.first(where: { $0.httpStatus == status }) ?? .internal
        }
    }

    package var code: Code
    package var message: String
    package var retryAfter: Int?
    /// A `google.rpc.QuotaFailure` detail's violation (`subject`, `description`): which quota a
    /// QUOTA_EXCEEDED answer says is spent.
    package var quotaViolation: (subject: String, description: String)?

    package init(_ code: Code, _ message: String, retryAfter: Int? = nil, quotaViolation: (subject: String, description: String)? = nil) {
        self.code = code
        self.message = message
        self.retryAfter = retryAfter
        self.quotaViolation = quotaViolation
    }

    /// QUOTA_EXCEEDED for the project's message rate (Firebase's "Message rate exceeded"), with
    /// `Retry-After`.
    package static func projectQuota(project: String, message: String, retryAfter: Int) -> FCMError {
        FCMError(.quotaExceeded, message, retryAfter: retryAfter, quotaViolation: ("project:\(project)", "Message rate exceeded."))
    }

    /// QUOTA_EXCEEDED for one device's message rate (Firebase's "Device message rate
    /// exceeded"), without `Retry-After`: Firebase asks for exponential back-off for this one.
    package static let deviceQuota = FCMError(
        .quotaExceeded, "Device message rate exceeded.", quotaViolation: ("device", "Device message rate exceeded."))

    package var response: SimulatorResponse {
        var details: [[String: Any]] = [
            ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": self.code.errorCode]
        ]
        if let violation = self.quotaViolation {
            details.append([
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [["subject": violation.subject, "description": violation.description]],
            ])
        }
        let body: [String: Any] = [
            "error": [
                "code": self.code.httpStatus,
                "message": self.message,
                "status": self.code.status,
                "details": details,
            ] as [String: Any]
        ]
        let headers = self.retryAfter.map { [(HTTPHeaderName.retryAfter, String($0))] } ?? []
        return .json(status: self.code.httpStatus, body, headers: headers, reason: self.code.errorCode)
    }

    /// 401 for a missing, unknown, expired or wrong-project access token (Google's shape, no FcmError detail).
    package static var unauthenticated: SimulatorResponse {
        .json(
            status: 401,
            [
                "error": [
                    "code": 401,
                    "message":
                        "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                    "status": "UNAUTHENTICATED",
                ] as [String: Any]
            ],
            headers: [("www-authenticate", "Bearer realm=\"https://accounts.google.com/\"")],
            reason: "UNAUTHENTICATED"
        )
    }

    /// 404 for paths the FCM API does not have.
    package static func notFound(_ path: String) -> SimulatorResponse {
        .json(
            status: 404,
            ["error": ["code": 404, "message": "The requested URL \(path) was not found.", "status": "NOT_FOUND"] as [String: Any]],
            reason: "NOT_FOUND"
        )
    }
}
