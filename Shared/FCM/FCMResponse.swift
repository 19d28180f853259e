import Foundation
import PushWire

/// FCM's answer to one send, parsed: the name on success, Google's error envelope otherwise.
package struct FCMResponse: Sendable, Equatable {
    package var status: Int
    /// `projects/<p>/messages/<id>` on 200.
    package var name: String?
    /// `error.details[].errorCode` of the `google.firebase.fcm.v1.FcmError` detail; nil if absent.
    package var errorCode: FCMErrorCode?
    /// `error.status`, e.g. `INVALID_ARGUMENT`.
    package var errorStatus: String?
    /// `error.message` (Google's text; it carries no credentials).
    package var errorMessage: String?
    /// `field` of each `google.rpc.BadRequest` field violation, e.g. `message.token`.
    package var fieldViolations: [String]
    /// The violations of `google.rpc.QuotaFailure` details (a QUOTA_EXCEEDED answer names the
    /// quota that is spent there).
    package var quotaViolations: [QuotaViolation]
    /// The `Retry-After` header, seconds or HTTP date, as a delay from the time of the answer.
    package var retryAfter: Duration?

    package init(
        status: Int,
        name: String? = nil,
        errorCode: FCMErrorCode? = nil,
        errorStatus: String? = nil,
        errorMessage: String? = nil,
        fieldViolations: [String] = [],
        quotaViolations: [QuotaViolation] = [],
        retryAfter: Duration? = nil
    ) {
        self.status = status
        self.name = name
        self.errorCode = errorCode
        self.errorStatus = errorStatus
        self.errorMessage = errorMessage
        self.fieldViolations = fieldViolations
        self.quotaViolations = quotaViolations
        self.retryAfter = retryAfter
    }

    /// One violation of a `google.rpc.QuotaFailure` detail: `subject` (what the quota is
    /// counted on) and `description` (which limit), as Google wrote them; either may be absent.
    package struct QuotaViolation: Sendable, Equatable {
        package var subject: String?
        package var description: String?

        package init(subject: String?, description: String?) {
            self.subject = subject
            self.description = description
        }
    }

    /// Parses a body and a `Retry-After` value. A body that is not JSON leaves the fields nil, so
    /// the outcome falls back to the HTTP status.
    package init(status: Int, body: some Collection<UInt8>, retryAfterHeader: String?, now: Date = Date()) {
        self.init(status: status, retryAfter: retryAfterHeader.flatMap { RetryAfter.delay($0, now: now) })
        if status == 200, let name = Self.successName(body) {
            self.name = name
            return
        }
        guard !body.isEmpty,
            let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any]
        else { return }
        self.name = object["name"] as? String
        guard let error = object["error"] as? [String: Any] else { return }
        self.errorStatus = error["status"] as? String
        self.errorMessage = error["message"] as? String
        for detail in error["details"] as? [[String: Any]] ?? [] {
            let type = detail["@type"] as? String ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError"), let code = detail["errorCode"] as? String {
                self.errorCode = FCMErrorCode(rawValue: code)
            }
            for violation in detail["fieldViolations"] as? [[String: Any]] ?? [] {
                if let field = violation["field"] as? String { self.fieldViolations.append(field) }
            }
            if type.hasSuffix("google.rpc.QuotaFailure") {
                for violation in detail["violations"] as? [[String: Any]] ?? [] {
                    self.quotaViolations.append(
                        QuotaViolation(subject: violation["subject"] as? String, description: violation["description"] as? String))
                }
            }
        }
    }

    /// The `name` of a success body, `{"name": "projects/<p>/messages/<id>"}`, read without
    /// `JSONSerialization` (which, with the dictionary it builds, was 5 % of the fcm-sender's
    /// CPU). Reads only that plain shape: one member, a string without escapes; nil for any
    /// other body, which then takes the general path (and gives the same `name`).
    static func successName(_ body: some Collection<UInt8>) -> String? {
        let bytes = Array(body)
        var index = 0
        func skipWhitespace() {
            while index < bytes.count, bytes[index] == 0x20 || bytes[index] == 0x09 || bytes[index] == 0x0A || bytes[index] == 0x0D {
                index += 1
            }
        }
        func consume(_ text: StaticString) -> Bool {
            skipWhitespace()
            let expected = UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount)
            guard bytes.count - index >= expected.count, bytes[index..<(index + expected.count)].elementsEqual(expected) else { return false }
            index += expected.count
            return true
        }
        guard consume("{"), consume(#""name""#), consume(":"), consume(#"""#) else { return nil }
        let start = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\\"), bytes[index] >= 0x20 {
            index += 1
        }
        let end = index
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\""), consume(#"""#), consume("}") else { return nil }
        skipWhitespace()
        guard index == bytes.count else { return nil }
        return String(validating: bytes[start..<end], as: UTF8.self)
    }

}
