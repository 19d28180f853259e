import Foundation
import PushEvents

/// What an `AudienceFilter` may say, checked against the targeted apps (docs/delivery-requests.md
/// "Targeting"): each refusal names the node by its path in the request
/// (`audience.filter.all[1].any[0]`). The checked tree has every value in its canonical form and
/// every parameter condition's `type` set, so that `AudienceFilterSQL` compiles it without the
/// catalog.
enum AudienceFilterRules {
    static let maximumDepth = 5
    static let maximumConditions = 50
    static let maximumValues = 1_000
    static let maximumValueBytes = 1_024
    static let parameterTypes: Set<String> = ["string", "integer", "decimal", "boolean", "date"]

    /// How a field's values compare.
    enum Kind: String {
        case string, number, boolean, date, version, timestamp, app, platform
    }

    /// The device fields a condition may name, with how they compare.
    static let deviceFields: [String: Kind] = [
        "app": .app, "platform": .platform, "osName": .string, "osVersion": .version, "osLanguage": .string, "userKey": .string,
        "registeredAt": .timestamp, "updatedAt": .timestamp,
    ]

    /// The operators each kind of field takes.
    static func operators(of kind: Kind) -> [String] {
        let presence = ["exists", "not exists"]
        let order = ["<", "<=", ">", ">=", "between"]
        switch kind {
        case .string: return ["=", "!=", "in", "not in"] + order + ["starts with"] + presence
        case .number: return ["=", "!=", "in", "not in"] + order + presence
        case .boolean: return ["=", "!="] + presence
        case .date: return ["=", "!="] + order + ["in the last"] + presence
        case .version: return ["=", "!="] + order + presence
        case .timestamp: return order + ["in the last"]
        case .app, .platform: return ["=", "!=", "in", "not in"]
        }
    }

    struct Failure: Error {
        var reason: String
    }

    /// The filter checked and made canonical, or the first problem found (depth first, in order).
    static func checked(_ filter: AudienceFilter, apps: [PlanningApp]) throws(Failure) -> AudienceFilter {
        var conditions = 0
        return try checked(filter, path: "audience.filter", depth: 0, apps: apps, conditions: &conditions)
    }

    private static func checked(_ node: AudienceFilter, path: String, depth: Int, apps: [PlanningApp], conditions: inout Int) throws(Failure)
        -> AudienceFilter
    {
        func group(_ nodes: [AudienceFilter], _ name: String) throws(Failure) -> [AudienceFilter] {
            guard depth < maximumDepth else { throw Failure(reason: "\(path): groups nest at most \(maximumDepth) deep") }
            guard !nodes.isEmpty else { throw Failure(reason: "\(path).\(name) is empty") }
            var checkedNodes: [AudienceFilter] = []
            for (index, child) in nodes.enumerated() {
                checkedNodes.append(try checked(child, path: "\(path).\(name)[\(index)]", depth: depth + 1, apps: apps, conditions: &conditions))
            }
            return checkedNodes
        }
        switch node {
        case .all(let nodes): return .all(try group(nodes, "all"))
        case .any(let nodes): return .any(try group(nodes, "any"))
        case .not(let child):
            guard depth < maximumDepth else { throw Failure(reason: "\(path): groups nest at most \(maximumDepth) deep") }
            return .not(try checked(child, path: "\(path).not", depth: depth + 1, apps: apps, conditions: &conditions))
        case .condition(let condition):
            conditions += 1
            guard conditions <= maximumConditions else { throw Failure(reason: "\(path): a filter has at most \(maximumConditions) conditions") }
            return .condition(try checked(condition, path: path, apps: apps))
        }
    }

    private static func checked(_ condition: AudienceCondition, path: String, apps: [PlanningApp]) throws(Failure) -> AudienceCondition {
        var condition = condition
        let kind: Kind
        switch (condition.param, condition.device) {
        case (let name?, nil):
            guard !name.isEmpty, name.utf8.count <= 128 else { throw Failure(reason: "\(path).param must be 1 to 128 bytes") }
            guard condition.type == nil || parameterTypes.contains(condition.type!) else {
                throw Failure(reason: "\(path).type must be one of \(parameterTypes.sorted().joined(separator: ", "))")
            }
            let declared = Set(apps.compactMap { $0.parameterTypes[name] })
            guard declared.count <= 1 else {
                throw Failure(
                    reason:
                        "\(path): the targeted apps declare parameter '\(name.prefix(64))' with different types (\(declared.sorted().joined(separator: ", ")))")
            }
            if let type = condition.type, let declaredType = declared.first, type != declaredType {
                throw Failure(reason: "\(path).type is \(type) but the targeted apps declare '\(name.prefix(64))' as \(declaredType)")
            }
            let type = condition.type ?? declared.first ?? "string"
            condition.type = type
            kind = type == "integer" || type == "decimal" ? .number : Kind(rawValue: type) ?? .string
        case (nil, let field?):
            guard let fieldKind = deviceFields[field] else {
                throw Failure(reason: "\(path).device must be one of \(deviceFields.keys.sorted().joined(separator: ", "))")
            }
            guard condition.type == nil else { throw Failure(reason: "\(path).type applies to a param only") }
            kind = fieldKind
        default:
            throw Failure(reason: "\(path) needs exactly one of param and device")
        }
        let subject = condition.param.map { "parameter '\($0.prefix(64))' (\(condition.type ?? "string"))" } ?? "device field \(condition.device ?? "")"
        let allowed = operators(of: kind)
        guard allowed.contains(condition.op) else {
            throw Failure(reason: "\(path).op '\(condition.op.prefix(32))' does not apply to \(subject): use one of \(allowed.joined(separator: ", "))")
        }
        switch condition.op {
        case "exists", "not exists":
            guard condition.value == nil, condition.values == nil else { throw Failure(reason: "\(path): \(condition.op) takes no value") }
        case "in", "not in", "between":
            guard condition.value == nil, let values = condition.values else { throw Failure(reason: "\(path): \(condition.op) takes values (a list)") }
            if condition.op == "between" {
                guard values.count == 2 else { throw Failure(reason: "\(path).values: between takes two values, the lowest and the highest") }
            } else {
                guard (1...maximumValues).contains(values.count) else { throw Failure(reason: "\(path).values must hold 1 to \(maximumValues) values") }
            }
            var canonical: [ScalarValue] = []
            for (index, value) in values.enumerated() {
                canonical.append(try Self.canonical(value, kind: kind, path: "\(path).values[\(index)]", apps: apps))
            }
            if condition.op == "between", !inOrder(canonical[0].text, canonical[1].text, kind: kind) {
                throw Failure(reason: "\(path).values: the first value of between must not be above the second")
            }
            condition.values = canonical
        case "in the last":
            guard condition.values == nil, let value = condition.value else { throw Failure(reason: "\(path): in the last takes a value such as \"30 days\"") }
            guard period(value.text) != nil else {
                throw Failure(reason: "\(path).value must be a period: a whole number of minutes, hours, days or weeks, up to 100 years (\"30 days\")")
            }
        default:
            guard condition.values == nil, let value = condition.value else { throw Failure(reason: "\(path): \(condition.op) takes a value") }
            condition.value = try canonical(value, kind: kind, path: "\(path).value", apps: apps)
        }
        return condition
    }

    /// A value in the form the compiled SQL binds: numbers as written, booleans `true`/`false`,
    /// dates `YYYY-MM-DD`, versions `{major,minor,patch,build}`, times ISO 8601 in UTC, apps by id.
    private static func canonical(_ value: ScalarValue, kind: Kind, path: String, apps: [PlanningApp]) throws(Failure) -> ScalarValue {
        let text = value.text
        guard text.utf8.count <= maximumValueBytes else { throw Failure(reason: "\(path) is longer than \(maximumValueBytes) bytes") }
        switch kind {
        case .string:
            return value
        case .number:
            guard isNumber(text) else { throw Failure(reason: "\(path) must be a number") }
            return value
        case .boolean:
            guard let flag = boolean(text) else { throw Failure(reason: "\(path) must be true or false") }
            return ScalarValue(flag ? "true" : "false")
        case .date:
            guard let day = day(text) else { throw Failure(reason: "\(path) must be a date (YYYY-MM-DD)") }
            return ScalarValue(day)
        case .version:
            guard let version = version(text) else { throw Failure(reason: "\(path) must hold a version number (17, 17.2, 17.2.1)") }
            return ScalarValue("{" + version.map(String.init).joined(separator: ",") + "}")
        case .timestamp:
            guard let date = timestamp(text) else { throw Failure(reason: "\(path) must be a date (YYYY-MM-DD) or an ISO 8601 time with its offset") }
            return ScalarValue(date.formatted(.iso8601))
        case .app:
            guard let app = apps.first(where: { $0.integrationKey == text }) else {
                throw Failure(reason: "\(path): '\(text.prefix(64))' is not the integration key of a targeted app")
            }
            return ScalarValue(app.appId.uuidString.lowercased())
        case .platform:
            guard Platform(rawValue: text) != nil else { throw Failure(reason: "\(path) must be ios or android") }
            return value
        }
    }

    private static func inOrder(_ low: String, _ high: String, kind: Kind) -> Bool {
        switch kind {
        case .number: return (Double(low) ?? 0) <= (Double(high) ?? 0)
        case .version:
            // Canonical versions are `{major,minor,patch,build}`.
            func parts(_ text: String) -> [Int] { text.dropFirst().dropLast().split(separator: ",").compactMap { Int($0) } }
            return !parts(high).lexicographicallyPrecedes(parts(low))
        case .timestamp: return (timestamp(low) ?? .distantPast) <= (timestamp(high) ?? .distantFuture)
        default: return Array(low.utf8).lexicographicallyPrecedes(Array(high.utf8)) || low == high
        }
    }

    // MARK: value forms (the same rules the compiled SQL applies to the stored values)

    /// A decimal number as the SQL's pattern reads it: sign, digits, a point, an exponent.
    static func isNumber(_ text: String) -> Bool {
        text.wholeMatch(of: /[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?/) != nil && (Double(text)?.isFinite ?? false)
    }

    static func boolean(_ text: String) -> Bool? {
        switch text.lowercased() {
        case "true", "1": true
        case "false", "0": false
        default: nil
        }
    }

    /// The first ten characters when they are a valid calendar date.
    static func day(_ text: String) -> String? {
        let prefix = String(text.prefix(10))
        guard let match = prefix.wholeMatch(of: /([0-9]{4})-([0-9]{2})-([0-9]{2})/), let year = Int(match.output.1),
            let month = Int(match.output.2), let day = Int(match.output.3)
        else { return nil }
        // A day that exists (not 2026-02-30): the date built from the parts has the same parts.
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        guard let date = calendar.date(from: DateComponents(year: year, month: month, day: day)),
            calendar.dateComponents([.year, .month, .day], from: date) == DateComponents(year: year, month: month, day: day)
        else { return nil }
        return prefix
    }

    /// The first version number in the text (`iOS 17.2` → 17, 2, 0, 0): up to four parts of up to
    /// nine digits, the missing ones 0.
    static func version(_ text: String) -> [Int]? {
        guard let match = text.firstMatch(of: /[0-9]{1,9}(\.[0-9]{1,9})*/) else { return nil }
        let parts = match.output.0.split(separator: ".").prefix(4).compactMap { Int($0) }
        return parts + Array(repeating: 0, count: 4 - parts.count)
    }

    static func timestamp(_ text: String) -> Date? {
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        guard text.count == 10, day(text) != nil else { return nil }
        return try? Date.ISO8601FormatStyle().year().month().day().parse(text)
    }

    /// `N minutes|hours|days|weeks` (singular too) as seconds, at most 100 years.
    static func period(_ text: String) -> TimeInterval? {
        guard let match = text.wholeMatch(of: /([0-9]{1,6}) (minute|hour|day|week)s?/), let count = Double(match.output.1), count > 0 else { return nil }
        let unit: TimeInterval =
            switch match.output.2 {
            case "minute": 60
            case "hour": 3_600
            case "day": 86_400
            default: 604_800
            }
        let seconds = count * unit
        return seconds <= 100 * 366 * 86_400 ? seconds : nil
    }
}
