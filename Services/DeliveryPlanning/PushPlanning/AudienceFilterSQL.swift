import Foundation
import PushEvents

/// A checked `AudienceFilter` as a SQL condition on `push.subscriptions s`: the text holds only
/// the tree's structure, column names and fixed patterns; every name and value the request gave
/// is an element of one bound text array, read as `f.v[n]` from the statement's
/// `CROSS JOIN (SELECT $1::text[] AS v) f` (so the condition composes with the statement's own
/// bound parameters, and no value is ever spliced into text).
///
/// Each condition is true or false, never unknown: a device without the parameter, or whose
/// value is not of the condition's type, fails every condition but `not exists`, and `not`
/// turns that into true (docs/delivery-requests.md "Targeting").
struct AudienceFilterSQL {
    /// The condition (`true` without a filter).
    var condition: String
    /// The bound array `f.v`.
    var values: [String]

    /// `reference` is the moment relative periods count back from (`in the last 30 days`): the
    /// delivery's send time, the same for every page and every replay.
    init(_ filter: AudienceFilter?, reference: Date) {
        var values: [String] = []
        condition = filter.map { Self.sql($0, reference: reference, values: &values) } ?? "true"
        self.values = values
    }

    private static func sql(_ node: AudienceFilter, reference: Date, values: inout [String]) -> String {
        switch node {
        case .all(let nodes): "(" + nodes.map { sql($0, reference: reference, values: &values) }.joined(separator: " AND ") + ")"
        case .any(let nodes): "(" + nodes.map { sql($0, reference: reference, values: &values) }.joined(separator: " OR ") + ")"
        case .not(let child): "(NOT " + sql(child, reference: reference, values: &values) + ")"
        case .condition(let condition): "coalesce(" + sql(condition, reference: reference, values: &values) + ", false)"
        }
    }

    /// Binds `text` and answers its reference.
    private static func bind(_ text: String, _ values: inout [String]) -> String {
        values.append(text)
        return "f.v[\(values.count)]"
    }

    /// Binds a list and answers the slice that holds it.
    private static func bind(list: [String], _ values: inout [String]) -> String {
        let first = values.count + 1
        values += list
        return "f.v[\(first):\(values.count)]"
    }

    static let numberPattern = #"'^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$'"#

    private static func sql(_ condition: AudienceCondition, reference: Date, values: inout [String]) -> String {
        typealias Kind = AudienceFilterRules.Kind
        // The compared expression (NULL when absent or not of the type), its kind, and the cast
        // of a bound value to the same type.
        let expression: String
        let kind: Kind
        if let name = condition.param {
            let raw = "(s.params->>\(bind(name, &values)))"
            switch condition.type ?? "string" {
            case "integer", "decimal":
                kind = .number
                expression = "(CASE WHEN \(raw) ~ \(numberPattern) THEN \(raw)::numeric END)"
            case "boolean":
                kind = .boolean
                expression = "(CASE lower(\(raw)) WHEN 'true' THEN true WHEN '1' THEN true WHEN 'false' THEN false WHEN '0' THEN false END)"
            case "date":
                kind = .date
                expression = "(CASE WHEN \(raw) ~ '^[0-9]{4}-[0-9]{2}-[0-9]{2}' THEN left(\(raw), 10) END)"
            default:
                kind = .string
                expression = raw
            }
        } else {
            kind = AudienceFilterRules.deviceFields[condition.device ?? ""] ?? .string
            switch condition.device {
            case "app": expression = "s.app_id"
            case "platform": expression = "s.platform"
            case "osName": expression = "nullif(s.os_name, '')"
            case "osVersion":
                // The first version number, padded to four parts (NULL without one: `array || NULL`
                // would give the padding alone).
                let number = "substring(s.os_version from '[0-9]{1,9}(?:\\.[0-9]{1,9})*')"
                expression = "(CASE WHEN \(number) IS NOT NULL THEN (string_to_array(\(number), '.')::int[] || '{0,0,0,0}'::int[])[1:4] END)"
            case "osLanguage": expression = "nullif(s.os_language, '')"
            case "userKey": expression = "nullif(s.user_key, '')"
            case "registeredAt": expression = "s.registered_at"
            default: expression = "s.updated_at"
            }
        }
        let cast =
            switch kind {
            case .number: "::numeric"
            case .boolean: "::boolean"
            case .version: "::int[]"
            case .timestamp: "::timestamptz"
            case .app: "::uuid"
            case .string, .date, .platform: ""
            }
        // Strings and dates order by their bytes (UTF-8), whatever the database's collation.
        let ordered = kind == .string || kind == .date ? "\(expression) COLLATE \"C\"" : expression
        let value = { (values: inout [String]) in bind(condition.value?.text ?? "", &values) + cast }
        switch condition.op {
        case "=": return "\(expression) = \(value(&values))"
        case "!=": return "\(expression) <> \(value(&values))"
        case "<", "<=", ">", ">=": return "\(ordered) \(condition.op) \(value(&values))"
        case "between":
            let bounds = condition.values ?? []
            let low = bind(bounds.first?.text ?? "", &values) + cast
            let high = bind(bounds.last?.text ?? "", &values) + cast
            return "\(ordered) BETWEEN \(low) AND \(high)"
        case "in", "not in":
            let list = bind(list: (condition.values ?? []).map(\.text), &values)
            let listCast = cast.isEmpty ? "" : cast + "[]"
            return condition.op == "in" ? "\(expression) = ANY(\(list)\(listCast))" : "NOT (\(expression) = ANY(\(list)\(listCast)))"
        case "starts with": return "starts_with(\(expression), \(value(&values)))"
        case "exists": return "\(expression) IS NOT NULL"
        case "not exists": return "\(expression) IS NULL"
        default:  // in the last: from the period's start up to the reference moment
            let seconds = AudienceFilterRules.period(condition.value?.text ?? "") ?? 0
            let start = reference.addingTimeInterval(-seconds)
            if kind == .date {
                let low = bind(Self.day(start), &values)
                let high = bind(Self.day(reference), &values)
                return "\(ordered) BETWEEN \(low) AND \(high)"
            }
            let low = bind(start.formatted(.iso8601), &values)
            let high = bind(reference.formatted(.iso8601), &values)
            return "\(expression) BETWEEN \(low)::timestamptz AND \(high)::timestamptz"
        }
    }

    /// The UTC calendar day of `date`, `YYYY-MM-DD`.
    static func day(_ date: Date) -> String {
        String(date.formatted(.iso8601.year().month().day()).prefix(10))
    }
}
