import Foundation

/// The compose form of a delivery: what a person fills in, turned into a delivery request
/// document (contract v1, docs/delivery-requests.md) for the deliveries' admin API, which
/// validates it (its refusal lists every problem), previews it or accepts it.
package struct ConsoleComposer: Sendable, Equatable {
    package var service = ""
    package var title = ""
    package var body = ""
    /// `all`, `userKeys`, `filter` or `segment`.
    package var audience = "all"
    package var userKeys = ""
    /// With `segment`: the service's segment by name (its latest version).
    package var segment = ""
    /// With `filter`: whether every condition must hold (`all`) or one is enough (`any`).
    package var match = "all"
    /// With `filter`: the condition rows; a row without an operator is left out.
    package var conditions: [Condition] = Array(repeating: Condition(), count: Self.conditionRows)
    package var proofUserKeys = ""
    /// When to send, UTC, as a `datetime-local` input gives it (`2026-11-27T09:30`); empty sends now.
    package var sendAt = ""

    /// How many condition rows the form offers.
    package static let conditionRows = 4
    /// What a row's field may be: a subscription parameter (named in the row), or a device field.
    package static let fields = ["param", "app", "platform", "osName", "osVersion", "osLanguage", "userKey", "registeredAt", "updatedAt"]
    package static let operators = ["=", "!=", "in", "not in", "<", "<=", ">", ">=", "between", "starts with", "exists", "not exists", "in the last"]

    /// One row of the condition builder: `param` (with its name) or a device field, an operator
    /// and the value as typed (`in`, `not in` and `between` take comma-separated values).
    package struct Condition: Sendable, Equatable {
        package var field = "param"
        package var param = ""
        package var op = ""
        package var value = ""

        package init(field: String = "param", param: String = "", op: String = "", value: String = "") {
            self.field = field
            self.param = param
            self.op = op
            self.value = value
        }

        /// The contract's condition object; nil for a row left empty. Values are sent as typed
        /// (the planner checks them and names the row by its path in its refusal).
        var object: [String: Any]? {
            guard ConsoleComposer.operators.contains(op), ConsoleComposer.fields.contains(field) else { return nil }
            var object: [String: Any] = ["op": op]
            if field == "param" { object["param"] = param.trimmingCharacters(in: .whitespaces) } else { object["device"] = field }
            switch op {
            case "exists", "not exists": break
            case "in", "not in", "between": object["values"] = ConsoleComposer.lines(value)
            default: object["value"] = value.trimmingCharacters(in: .whitespaces)
            }
            return object
        }
    }

    package init() {}

    package init(fields: [String: String]) {
        service = fields["service"] ?? ""
        title = fields["title"] ?? ""
        body = fields["body"] ?? ""
        audience = ["userKeys", "filter", "segment"].contains(fields["audience"] ?? "") ? fields["audience"]! : "all"
        userKeys = fields["userKeys"] ?? ""
        segment = (fields["segment"] ?? "").trimmingCharacters(in: .whitespaces)
        match = fields["match"] == "any" ? "any" : "all"
        conditions = (0..<Self.conditionRows).map { row in
            Condition(
                field: fields["cond\(row)Field"] ?? "param", param: fields["cond\(row)Param"] ?? "", op: fields["cond\(row)Op"] ?? "",
                value: fields["cond\(row)Value"] ?? "")
        }
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

    /// The request's audience; a condition builder left empty is a filter with no condition,
    /// which the planner refuses (`audience.filter.all is empty`) rather than sending to everyone.
    var audienceObject: [String: Any] {
        switch audience {
        case "userKeys": ["userKeys": Self.lines(userKeys)]
        case "filter": ["filter": [match: conditions.compactMap(\.object)]]
        case "segment": ["segment": ["name": segment]]
        default: ["all": true]
        }
    }

    /// The request document; `proof` sends it to `proofUserKeys` only.
    package func document(requestId: String, proof: Bool) throws -> Data {
        var request: [String: Any] = [
            "type": "DeliveryRequested", "version": 1, "requestId": requestId, "service": service,
            "audience": audienceObject,
            "content": ["title": title, "body": body],
        ]
        if let sendAtISO { request["sendAt"] = sendAtISO }
        if proof { request["proof"] = ["userKeys": Self.lines(proofUserKeys)] }
        return try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])
    }
}
