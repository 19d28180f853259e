import Foundation

/// The compose form of a delivery: what a person fills in, turned into a delivery request
/// document (contract v1, docs/delivery-requests.md) for the deliveries' admin API, which
/// validates it (its refusal lists every problem), previews it or accepts it.
package struct ConsoleComposer: Sendable, Equatable {
    package var service = ""
    package var title = ""
    package var body = ""
    /// `all` or `userKeys`.
    package var audience = "all"
    package var userKeys = ""
    package var proofUserKeys = ""
    /// When to send, UTC, as a `datetime-local` input gives it (`2026-11-27T09:30`); empty sends now.
    package var sendAt = ""

    package init() {}

    package init(fields: [String: String]) {
        service = fields["service"] ?? ""
        title = fields["title"] ?? ""
        body = fields["body"] ?? ""
        audience = fields["audience"] == "userKeys" ? "userKeys" : "all"
        userKeys = fields["userKeys"] ?? ""
        proofUserKeys = fields["proofUserKeys"] ?? ""
        sendAt = (fields["sendAt"] ?? "").trimmingCharacters(in: .whitespaces)
    }

    /// `sendAt` as the contract's ISO 8601 UTC time (`2026-11-27T09:30:00Z`); the planner's
    /// intake checks it (a past time sends now). Seconds are added when the input has none.
    var sendAtISO: String? {
        guard !sendAt.isEmpty else { return nil }
        let trimmed = sendAt.hasSuffix("Z") ? String(sendAt.dropLast()) : sendAt
        return trimmed.count == 16 ? "\(trimmed):00Z" : "\(trimmed)Z"
    }

    static func lines(_ text: String) -> [String] {
        text.split(whereSeparator: { $0.isNewline || $0 == "," }).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    /// The request document; `proof` sends it to `proofUserKeys` only.
    package func document(requestId: String, proof: Bool) throws -> Data {
        var request: [String: Any] = [
            "type": "DeliveryRequested", "version": 1, "requestId": requestId, "service": service,
            "audience": audience == "userKeys" ? ["userKeys": Self.lines(userKeys)] : ["all": true],
            "content": ["title": title, "body": body],
        ]
        if let sendAtISO { request["sendAt"] = sendAtISO }
        if proof { request["proof"] = ["userKeys": Self.lines(proofUserKeys)] }
        return try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])
    }
}
