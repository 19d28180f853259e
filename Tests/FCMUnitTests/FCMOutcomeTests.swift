import FCM
import Foundation
import PushWire
import Testing

@Suite("FCMResponse: parsing and classification (no network)")
struct FCMOutcomeTests {
    static func errorBody(status: Int, googleStatus: String, errorCode: String?, message: String = "m") -> String {
        let details =
            errorCode.map {
                #","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"\#($0)"}]"#
            } ?? ""
        return #"{"error":{"code":\#(status),"message":"\#(message)","status":"\#(googleStatus)"\#(details)}}"#
    }

    static func response(_ status: Int, _ body: String, retryAfter: String? = nil) -> FCMResponse {
        FCMResponse(status: status, body: Array(body.utf8), retryAfterHeader: retryAfter, now: Date(timeIntervalSince1970: 1_700_000_000))
    }

    @Test(
        "a success body's name, however it is written, as JSONSerialization reads it",
        arguments: [
            #"{"name":"projects/p-1/messages/0:1500415314455276%31bd1c9631bd1c96"}"#,
            #"  {  "name" : "projects/p-1/messages/1" }  "#,
            #"{"other":[1,{"a":null},true],"name":"projects/p-1/messages/2","more":"x"}"#,
            #"{"name":"projects\/p-1\/messages\/3 caf\u00e9"}"#,
            #"{"name":"projects/p-1/messages/4 café"}"#,
            #"{"name":"projects/p-1/messages/5","name":"projects/p-1/messages/6"}"#,
            #"{"name":"projects/p-1/messages/7","score":1.5}"#,
            #"{"name":7}"#,
            #"{}"#,
            #"not json"#,
            #"{"name":"projects/p-1/messages/8"} trailing"#,
        ])
    func successName(_ body: String) {
        let parsed = Self.response(200, body)
        let reference = (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["name"] as? String
        #expect(parsed.name == reference, "\(body)")
        #expect(parsed.errorCode == nil && parsed.errorStatus == nil)
    }

    @Test("every errorCode maps to its action, with the errorCode as the reason")
    func errorCodes() {
        let cases: [(Int, String, String, String, String?, FCMOutcome)] = [
            (404, "NOT_FOUND", "UNREGISTERED", "Requested entity was not found.", nil, .tokenInvalid(reason: "UNREGISTERED")),
            (403, "PERMISSION_DENIED", "SENDER_ID_MISMATCH", "SenderId mismatch", nil, .tokenInvalid(reason: "SENDER_ID_MISMATCH")),
            (
                400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", nil,
                .tokenInvalid(reason: "INVALID_ARGUMENT")
            ),
            (400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Invalid data payload key: from", nil, .rejected(reason: "INVALID_ARGUMENT")),
            (
                400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", "Message is too big. The payload is 5000 bytes; the limit is 4096.", nil,
                .rejected(reason: "INVALID_ARGUMENT")
            ),
            (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "q", nil, .quotaExceeded(after: .seconds(60))),
            (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "q", "10", .quotaExceeded(after: .seconds(60))),
            (429, "RESOURCE_EXHAUSTED", "QUOTA_EXCEEDED", "q", "120", .quotaExceeded(after: .seconds(120))),
            (503, "UNAVAILABLE", "UNAVAILABLE", "u", "10", .retry(reason: "UNAVAILABLE", after: .seconds(10))),
            (503, "UNAVAILABLE", "UNAVAILABLE", "u", nil, .retry(reason: "UNAVAILABLE", after: nil)),
            (500, "INTERNAL", "INTERNAL", "i", nil, .retry(reason: "INTERNAL", after: nil)),
            (
                401, "UNAUTHENTICATED", "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service", nil,
                .credentialRejected(reason: "THIRD_PARTY_AUTH_ERROR")
            ),
            // UNSPECIFIED_ERROR and unknown codes fall back to the status but keep their name.
            (500, "UNKNOWN", "UNSPECIFIED_ERROR", "x", nil, .retry(reason: "UNSPECIFIED_ERROR", after: nil)),
            (400, "INVALID_ARGUMENT", "SOMETHING_NEW", "x", nil, .rejected(reason: "SOMETHING_NEW")),
        ]
        for (status, googleStatus, code, message, retryAfter, expected) in cases {
            let response = Self.response(
                status, Self.errorBody(status: status, googleStatus: googleStatus, errorCode: code, message: message), retryAfter: retryAfter)
            #expect(response.errorCode == FCMErrorCode(rawValue: code), "\(code)")
            #expect(response.errorStatus == googleStatus)
            #expect(response.errorMessage == message)
            #expect(response.outcome == expected, "\(code) \(message)")
        }
        #expect(FCMErrorCode(rawValue: "SOMETHING_NEW").description == "SOMETHING_NEW")
        #expect(FCMErrorCode.thirdPartyAuthError.rawValue == "THIRD_PARTY_AUTH_ERROR")
    }

    @Test("without an FcmError detail the HTTP status decides, reason http-<status>")
    func statusFallback() {
        let cases: [(Int, String, String?, FCMOutcome)] = [
            (400, Self.errorBody(status: 400, googleStatus: "INVALID_ARGUMENT", errorCode: nil), nil, .rejected(reason: "http-400")),
            (401, Self.errorBody(status: 401, googleStatus: "UNAUTHENTICATED", errorCode: nil), nil, .credentialRejected(reason: "http-401")),
            (403, Self.errorBody(status: 403, googleStatus: "PERMISSION_DENIED", errorCode: nil), nil, .credentialRejected(reason: "http-403")),
            (404, Self.errorBody(status: 404, googleStatus: "NOT_FOUND", errorCode: nil), nil, .rejected(reason: "http-404")),
            (408, "", nil, .retry(reason: "http-408", after: nil)),
            (413, "", nil, .rejected(reason: "http-413")),
            (429, "", nil, .quotaExceeded(after: .seconds(60))),
            (429, "", "90", .quotaExceeded(after: .seconds(90))),
            (500, "<html>oops</html>", nil, .retry(reason: "http-500", after: nil)),
            (502, "", "5", .retry(reason: "http-502", after: .seconds(5))),
            (503, "", nil, .retry(reason: "http-503", after: nil)),
            (200, #"{"name":"projects/p/messages/0:1%2"}"#, nil, .sent(name: "projects/p/messages/0:1%2")),
        ]
        for (status, body, retryAfter, expected) in cases {
            #expect(Self.response(status, body, retryAfter: retryAfter).outcome == expected, "\(status)")
        }
    }

    @Test("INVALID_ARGUMENT names the token through a field violation on message.token")
    func fieldViolation() {
        let body =
            #"{"error":{"code":400,"message":"Request contains an invalid argument.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"INVALID_ARGUMENT"},{"@type":"type.googleapis.com/google.rpc.BadRequest","fieldViolations":[{"field":"message.token","description":"Invalid registration token"}]}]}}"#
        let response = Self.response(400, body)
        #expect(response.fieldViolations == ["message.token"])
        #expect(response.outcome == .tokenInvalid(reason: "INVALID_ARGUMENT"))
        let payload = body.replacingOccurrences(of: "message.token", with: "message.data").replacingOccurrences(of: "registration token", with: "value")
        #expect(Self.response(400, payload).outcome == .rejected(reason: "INVALID_ARGUMENT"))
    }

    @Test("Retry-After (one parser, PushWire.RetryAfter, for APNs and FCM): delta seconds or an HTTP date in any RFC 9110 form")
    func retryAfter() {
        let now = Date(timeIntervalSince1970: 1_700_000_000)  // Tue, 14 Nov 2023 22:13:20 GMT
        #expect(RetryAfter.delay("30", now: now) == .seconds(30))
        #expect(RetryAfter.delay("Tue, 14 Nov 2023 22:15:20 GMT", now: now) == .seconds(120))
        #expect(RetryAfter.delay("Tue, 14 Nov 2023 22:00:00 GMT", now: now) == .seconds(0))
        #expect(RetryAfter.delay("soon", now: now) == nil)
        // The other two date forms RFC 9110 lets a recipient meet, and a negative delta.
        #expect(RetryAfter.delay("Tuesday, 14-Nov-23 22:14:20 GMT", now: now) == .seconds(60))
        #expect(RetryAfter.delay("Tue Nov 14 22:13:50 2023", now: now) == .seconds(30))
        #expect(RetryAfter.delay(" -5 ", now: now) == .seconds(0))
    }

    /// A QUOTA_EXCEEDED body with `google.rpc.QuotaFailure` violations (subject, description).
    static func quotaBody(message: String, violations: [(String?, String?)]) -> String {
        let listed = violations.map { subject, description in
            let fields = [subject.map { #""subject":"\#($0)""# }, description.map { #""description":"\#($0)""# }].compactMap { $0 }
            return "{" + fields.joined(separator: ",") + "}"
        }
        let quotaFailure =
            violations.isEmpty ? "" : #",{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[\#(listed.joined(separator: ","))]}"#
        return
            #"{"error":{"code":429,"message":"\#(message)","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.firebase.fcm.v1.FcmError","errorCode":"QUOTA_EXCEEDED"}\#(quotaFailure)]}}"#
    }

    @Test("QUOTA_EXCEEDED for one device delays that message only; a project's, or an answer that does not say, pauses the project")
    func quotaScope() {
        let device = ("device", "Device message rate exceeded.")
        let project = ("project:p-1", "Message rate exceeded.")
        let cases: [(String, [(String?, String?)], String?, FCMQuotaScope, FCMOutcome)] = [
            // The QuotaFailure violations decide.
            ("Device message rate exceeded.", [device], nil, .device, .deviceQuotaExceeded(after: nil)),
            ("Device message rate exceeded.", [device], "5", .device, .deviceQuotaExceeded(after: .seconds(5))),
            ("Quota exceeded.", [(nil, "Device message rate exceeded.")], nil, .device, .deviceQuotaExceeded(after: nil)),
            ("Quota exceeded.", [("device", nil)], nil, .device, .deviceQuotaExceeded(after: nil)),
            ("Quota exceeded for quota metric 'Messages'.", [project], "12", .project, .quotaExceeded(after: .seconds(60))),
            ("Quota exceeded for quota metric 'Messages'.", [project], "120", .project, .quotaExceeded(after: .seconds(120))),
            // A device violation beside a project one: the project's quota is spent too.
            ("Device message rate exceeded.", [device, project], nil, .project, .quotaExceeded(after: .seconds(60))),
            // A violation that names no device, whatever the message says, is the project's.
            ("Device message rate exceeded.", [(nil, "Topic message rate exceeded.")], nil, .project, .quotaExceeded(after: .seconds(60))),
            // Without violations, the message decides; an answer that does not say is the project's.
            ("Device message rate exceeded.", [], nil, .device, .deviceQuotaExceeded(after: nil)),
            ("Quota exceeded for quota metric 'Messages'.", [], nil, .project, .quotaExceeded(after: .seconds(60))),
        ]
        for (message, violations, retryAfter, scope, outcome) in cases {
            let response = Self.response(429, Self.quotaBody(message: message, violations: violations), retryAfter: retryAfter)
            #expect(response.errorCode == .quotaExceeded)
            #expect(response.quotaViolations.count == violations.count)
            #expect(response.quotaScope == scope, "\(message) \(violations)")
            #expect(response.outcome == outcome, "\(message) \(violations)")
        }
        let parsed = Self.response(429, Self.quotaBody(message: "m", violations: [device]))
        #expect(parsed.quotaViolations == [FCMResponse.QuotaViolation(subject: "device", description: "Device message rate exceeded.")])
        // A bare 429 (no body) is the project's.
        #expect(Self.response(429, "").quotaScope == .project)
    }
}
