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
    /// When to send, in `timeZone`, as a `datetime-local` input gives it (`2026-11-27T09:30`);
    /// empty sends now.
    package var sendAt = ""
    /// The time zone `sendAt` is in: an IANA name (`Europe/Paris`); empty is UTC. The page
    /// fills in the browser's own zone when it opens.
    package var timeZone = ""
    /// Texts per language: rows with a tag become `content.languages` (docs/delivery-requests.md).
    package var languages: [Language] = Array(repeating: Language(), count: Self.languageRows)
    /// A/B test: the texts above (with their language rows) are the first variant, named
    /// `variantAName` ("A" when empty) with `variantAShare` per cent; each variant row with a
    /// name is another. With no named row there is no test (docs/console.md).
    package var variantAName = ""
    package var variantAShare = ""
    package var variants: [Variant] = Array(repeating: Variant(), count: Self.variantRows)
    /// A stored template of the service by name (its latest version); the texts above override it.
    package var template = ""
    /// `bulk` or `transactional`.
    package var priority = "bulk"
    /// The options below are sent as typed (numbers as numbers when they are): the planner
    /// checks them and its refusal names the field.
    package var throttle = ""
    /// Hours from the send time to `validUntil`; empty: the contract's default (24 hours).
    package var validHours = ""
    package var iosBadge = ""
    package var iosSound = ""
    package var iosCategory = ""
    package var iosThreadId = ""
    /// Empty (the contract's default), or one of `interruptionLevels`.
    package var iosInterruptionLevel = ""
    /// `data` or `notification`.
    package var androidMode = "data"
    package var androidChannel = ""
    package var androidImage = ""
    package var androidSound = ""
    /// `#rrggbb`, as typed (the planner checks it).
    package var androidColor = ""
    package var androidClickAction = ""

    /// The contract's `content.ios.interruptionLevel` values.
    package static let interruptionLevels = ["passive", "active", "time-sensitive", "critical"]

    /// How many condition rows the form offers.
    package static let conditionRows = 4
    /// How many language rows the form offers.
    package static let languageRows = 3
    /// How many variant rows the form offers besides the first variant (the texts above).
    package static let variantRows = 2

    /// One more A/B variant: a name, a share in per cent, a title and a message.
    package struct Variant: Sendable, Equatable {
        package var name = ""
        package var share = ""
        package var title = ""
        package var body = ""

        package init(name: String = "", share: String = "", title: String = "", body: String = "") {
            self.name = name
            self.share = share
            self.title = title
            self.body = body
        }
    }

    /// One language's texts: a BCP 47 tag, a title and a message.
    package struct Language: Sendable, Equatable {
        package var tag = ""
        package var title = ""
        package var body = ""

        package init(tag: String = "", title: String = "", body: String = "") {
            self.tag = tag
            self.title = title
            self.body = body
        }
    }
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
        timeZone = Self.trimmed(fields["timeZone"])
        languages = (0..<Self.languageRows).map { row in
            Language(tag: Self.trimmed(fields["lang\(row)Tag"]), title: fields["lang\(row)Title"] ?? "", body: fields["lang\(row)Body"] ?? "")
        }
        variantAName = Self.trimmed(fields["variantAName"])
        variantAShare = Self.trimmed(fields["variantAShare"])
        variants = (0..<Self.variantRows).map { row in
            Variant(
                name: Self.trimmed(fields["var\(row)Name"]), share: Self.trimmed(fields["var\(row)Share"]), title: fields["var\(row)Title"] ?? "",
                body: fields["var\(row)Body"] ?? "")
        }
        template = Self.trimmed(fields["template"])
        priority = fields["priority"] == "transactional" ? "transactional" : "bulk"
        throttle = Self.trimmed(fields["throttle"])
        validHours = Self.trimmed(fields["validHours"])
        iosBadge = Self.trimmed(fields["iosBadge"])
        iosSound = Self.trimmed(fields["iosSound"])
        iosCategory = Self.trimmed(fields["iosCategory"])
        iosThreadId = Self.trimmed(fields["iosThreadId"])
        iosInterruptionLevel = Self.interruptionLevels.contains(fields["iosInterruptionLevel"] ?? "") ? fields["iosInterruptionLevel"]! : ""
        androidMode = fields["androidMode"] == "notification" ? "notification" : "data"
        androidChannel = Self.trimmed(fields["androidChannel"])
        androidImage = Self.trimmed(fields["androidImage"])
        androidSound = Self.trimmed(fields["androidSound"])
        androidColor = Self.trimmed(fields["androidColor"])
        androidClickAction = Self.trimmed(fields["androidClickAction"])
    }

    static func trimmed(_ value: String?) -> String { (value ?? "").trimmingCharacters(in: .whitespaces) }

    /// A whole number as a number, anything else as typed (for the planner to refuse by name).
    static func number(_ text: String) -> Any { Int(text).map { $0 as Any } ?? text }

    /// `sendAt` as the contract's ISO 8601 UTC time (`2026-11-27T08:30:00Z` for 09:30 in
    /// `Europe/Paris`); the planner's intake checks it (a past time sends now). Input that is
    /// not a local date and time goes as typed, for the planner to refuse by name.
    var sendAtISO: String? {
        get throws(ComposerProblem) {
            guard !sendAt.isEmpty else { return nil }
            guard let date = try sendAtDate else {
                let trimmed = sendAt.hasSuffix("Z") ? String(sendAt.dropLast()) : sendAt
                return trimmed.count == 16 ? "\(trimmed):00Z" : "\(trimmed)Z"
            }
            return date.formatted(Date.ISO8601FormatStyle())
        }
    }

    /// The zone `sendAt` is read in; a name that is not a time zone is refused at its input.
    var zone: TimeZone {
        get throws(ComposerProblem) {
            if timeZone.isEmpty || timeZone == "UTC" { return .gmt }
            guard let zone = TimeZone(identifier: timeZone) else {
                throw ComposerProblem(
                    description: "timeZone '\(timeZone.prefix(64))' is not a time zone: an IANA name such as Europe/Paris or America/New_York")
            }
            return zone
        }
    }

    /// `sendAt` in `zone`; nil when it is not a local date and time.
    var sendAtDate: Date? {
        get throws(ComposerProblem) { Self.localTime(sendAt, in: try zone) }
    }

    /// A `datetime-local` input's value (`yyyy-MM-ddTHH:mm`, seconds optional) read in `zone`;
    /// nil when it is not that.
    package static func localTime(_ text: String, in zone: TimeZone) -> Date? {
        let parts = text.split(whereSeparator: { $0 == "-" || $0 == "T" || $0 == ":" }).map { Int($0) }
        guard text.count >= 16, text.count <= 19, parts.count == 5 || parts.count == 6, !parts.contains(nil) else { return nil }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = zone
        let components = DateComponents(
            year: parts[0], month: parts[1], day: parts[2], hour: parts[3], minute: parts[4], second: parts.count == 6 ? parts[5] : 0)
        guard components.isValidDate(in: calendar) else { return nil }
        return calendar.date(from: components)
    }

    /// The send time as the page shows it beside the input: UTC, and the operator's zone when
    /// it is another (`2026-11-27 08:30 UTC (09:30 Europe/Paris)`); nil when sending now or when
    /// the input is not a time.
    package var sendAtSummary: String? {
        guard let date = try? sendAtDate, let zone = try? zone else { return nil }
        func text(_ zone: TimeZone, withDate: Bool) -> String {
            var style = Date.VerbatimFormatStyle(
                format: withDate
                    ? "\(year: .defaultDigits)-\(month: .twoDigits)-\(day: .twoDigits) \(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits)"
                    : "\(hour: .twoDigits(clock: .twentyFourHour, hourCycle: .zeroBased)):\(minute: .twoDigits)",
                timeZone: zone, calendar: Calendar(identifier: .gregorian))
            style.locale = Locale(identifier: "en_US_POSIX")
            return date.formatted(style)
        }
        let utc = "\(text(.gmt, withDate: true)) UTC"
        guard zone != .gmt else { return utc }
        let sameDay = text(.gmt, withDate: true).prefix(10) == text(zone, withDate: true).prefix(10)
        return "\(utc) (\(text(zone, withDate: !sameDay)) \(zone.identifier))"
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

    /// The request's content: the texts typed (an empty one left to the template, or to the
    /// planner's refusal), the language rows with a tag, and the platforms' options set. With a
    /// named variant row the texts become `variants`: the texts above first, then each named
    /// row (shares sent as typed, for the planner to refuse by the variant's path).
    var contentObject: [String: Any] {
        var content: [String: Any] = [:]
        if !title.isEmpty { content["title"] = title }
        if !body.isEmpty { content["body"] = body }
        var languages: [String: Any] = [:]
        for row in self.languages where !row.tag.isEmpty {
            var texts: [String: String] = ["body": row.body]
            if !row.title.isEmpty { texts["title"] = row.title }
            languages[row.tag] = texts
        }
        if !languages.isEmpty { content["languages"] = languages }
        let named = variants.filter { !$0.name.isEmpty }
        if !named.isEmpty {
            var first: [String: Any] = ["name": variantAName.isEmpty ? "A" : variantAName, "share": Self.number(variantAShare)]
            for key in ["title", "body", "languages"] { first[key] = content.removeValue(forKey: key) }
            content["variants"] =
                [first]
                + named.map { row -> [String: Any] in
                    var variant: [String: Any] = ["name": row.name, "share": Self.number(row.share)]
                    if !row.title.isEmpty { variant["title"] = row.title }
                    if !row.body.isEmpty { variant["body"] = row.body }
                    return variant
                }
        }
        var ios: [String: Any] = [:]
        if !iosBadge.isEmpty { ios["badge"] = Self.number(iosBadge) }
        if !iosSound.isEmpty { ios["sound"] = iosSound }
        if !iosCategory.isEmpty { ios["category"] = iosCategory }
        if !iosThreadId.isEmpty { ios["threadId"] = iosThreadId }
        if !iosInterruptionLevel.isEmpty { ios["interruptionLevel"] = iosInterruptionLevel }
        if !ios.isEmpty { content["ios"] = ios }
        var android: [String: Any] = [:]
        if androidMode == "notification" { android["mode"] = "notification" }
        if !androidChannel.isEmpty { android["channelId"] = androidChannel }
        if !androidImage.isEmpty { android["image"] = androidImage }
        if !androidSound.isEmpty { android["sound"] = androidSound }
        if !androidColor.isEmpty { android["color"] = androidColor }
        if !androidClickAction.isEmpty { android["clickAction"] = androidClickAction }
        if !android.isEmpty { content["android"] = android }
        return content
    }

    /// The request document; `proof` sends it to `proofUserKeys` only. `now` is the send time
    /// `validHours` counts from when `sendAt` is empty.
    package func document(requestId: String, proof: Bool, now: Date = Date()) throws -> Data {
        var request: [String: Any] = [
            "type": "DeliveryRequested", "version": 1, "requestId": requestId, "service": service,
            "audience": audienceObject,
            "content": contentObject,
        ]
        let sendAtISO = try sendAtISO
        if let sendAtISO { request["sendAt"] = sendAtISO }
        if proof { request["proof"] = ["userKeys": Self.lines(proofUserKeys)] }
        if !template.isEmpty { request["template"] = ["name": template] }
        if priority == "transactional" { request["priority"] = priority }
        if !throttle.isEmpty { request["throttle"] = ["perSecond": Self.number(throttle)] }
        if !validHours.isEmpty {
            let start = sendAtISO.flatMap { try? Date($0, strategy: .iso8601) } ?? now
            if let hours = Int(validHours), hours > 0, hours <= 24 * 28 {
                let until = start.addingTimeInterval(Double(hours) * 3600)
                request["validUntil"] = until.formatted(Date.ISO8601FormatStyle())
            } else {
                throw ComposerProblem(description: "Valid for must be a whole number of hours from 1 to 672 (28 days), not '\(validHours.prefix(32))'")
            }
        }
        return try JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])
    }

    /// The form's input ids by the request path they fill (a refusal whose text starts with
    /// the path, or the path and a `.`, is shown at that input).
    static let inputsByPath: [String: String] = [
        "service": "service", "content.title": "title", "content.body": "body", "audience.userKeys": "userKeys", "audience.segment": "segment",
        "audience.filter": "match", "sendAt": "sendAt", "timeZone": "timeZone", "validUntil": "validHours", "template": "template", "priority": "priority",
        "throttle": "throttle", "proof": "proofUserKeys", "content.ios.badge": "iosBadge", "content.ios.sound": "iosSound",
        "content.ios.category": "iosCategory", "content.ios.threadId": "iosThreadId", "content.ios.interruptionLevel": "iosInterruptionLevel",
        "content.android.mode": "androidMode", "content.android.channelId": "androidChannel", "content.android.image": "androidImage",
        "content.android.sound": "androidSound", "content.android.color": "androidColor", "content.android.clickAction": "androidClickAction",
    ]

    /// The input a refusal of the admin API concerns, from the request path its text starts with
    /// (`content.ios.badge must be 0 or more` is the badge's; `content.variants[1].share …` the
    /// share of the first named variant row, the texts above being variant 0;
    /// `audience.filter.all[1]…` the second condition row that was sent); nil when the path is
    /// not one the form fills.
    package func input(forProblem text: String) -> String? {
        let path = String(text.prefix { !$0.isWhitespace && $0 != ":" && $0 != "," && $0 != "'" })
        func row(_ prefix: String) -> (index: Int, rest: String)? {
            guard path.hasPrefix(prefix + "["), let close = path.firstIndex(of: "]") else { return nil }
            guard let index = Int(path[path.index(path.startIndex, offsetBy: prefix.count + 1)..<close]) else { return nil }
            return (index, String(path[path.index(after: close)...]))
        }
        for group in ["all", "any"] {
            if let (index, rest) = row("audience.filter.\(group)") {
                // The rows sent: a row without an operator was left out of the request.
                let sent = conditions.indices.filter { conditions[$0].object != nil }
                guard index < sent.count else { return nil }
                let name = rest.hasPrefix(".param") ? "Param" : rest.hasPrefix(".op") ? "Op" : rest.hasPrefix(".device") ? "Field" : "Value"
                return "cond\(sent[index])\(name)"
            }
        }
        if let input = languageInput(path: path, text: text) { return input }
        if let (index, rest) = row("content.variants") {
            let named = variants.indices.filter { !variants[$0].name.isEmpty }
            if index == 0 {
                return rest.hasPrefix(".share") ? "variantAShare" : rest.hasPrefix(".title") ? "title" : rest.hasPrefix(".body") ? "body" : "variantAName"
            }
            guard index - 1 < named.count else { return nil }
            let name = rest.hasPrefix(".share") ? "Share" : rest.hasPrefix(".title") ? "Title" : rest.hasPrefix(".body") ? "Body" : "Name"
            return "var\(named[index - 1])\(name)"
        }
        var candidate = path
        while !candidate.isEmpty {
            if let input = Self.inputsByPath[candidate] { return input }
            guard let dot = candidate.lastIndex(of: ".") else { break }
            candidate = String(candidate[..<dot])
        }
        return nil
    }

    /// A refusal of the language rows (the texts above are variant 0, their rows its
    /// languages): `content.languages.fr.body …` is the body of the row tagged `fr`;
    /// `content.languages: 'x' …` the tag of the row it quotes (the last quoted, for two rows
    /// of one language).
    func languageInput(path: String, text: String) -> String? {
        let prefixes = ["content.languages", "content.variants[0].languages"]
        guard let prefix = prefixes.first(where: { path == $0 || path.hasPrefix($0 + ".") }) else { return nil }
        // The row written as quoted first; then one of the same language in another case.
        func row(of tag: Substring) -> Int? {
            languages.firstIndex { !$0.tag.isEmpty && $0.tag == tag } ?? languages.firstIndex { !$0.tag.isEmpty && $0.tag.lowercased() == tag.lowercased() }
        }
        if path == prefix {
            let quoted = text.split(separator: "'", omittingEmptySubsequences: false).enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
            guard let index = quoted.reversed().lazy.compactMap({ row(of: $0) }).first else { return nil }
            return "lang\(index)Tag"
        }
        let parts = path.dropFirst(prefix.count + 1).split(separator: ".", maxSplits: 1)
        guard let tag = parts.first, let index = row(of: tag) else { return nil }
        switch parts.count > 1 ? parts[1] : "" {
        case "title": return "lang\(index)Title"
        case "body", "subtitle": return "lang\(index)Body"
        default: return "lang\(index)Tag"
        }
    }

    /// The refusals that concern an input, in their order, each with its input.
    package func fieldProblems(_ problems: [String]) -> [(input: String, text: String)] {
        problems.compactMap { problem in input(forProblem: problem).map { (input: $0, text: problem) } }
    }

    /// An input's name as its label on the page says it (`lang1Body`: "Language 2: message").
    package static func label(ofInput input: String) -> String {
        let rows: [(prefix: String, name: String, first: Int, fields: [String: String])] = [
            ("lang", "Language", 1, ["Tag": "tag", "Title": "title", "Body": "message"]),
            ("cond", "Condition", 1, ["Field": "field", "Param": "parameter name", "Op": "operator", "Value": "value"]),
            ("var", "Variant", 2, ["Name": "name", "Share": "share", "Title": "title", "Body": "message"]),
        ]
        for row in rows where input.hasPrefix(row.prefix) {
            let rest = input.dropFirst(row.prefix.count)
            guard let digits = rest.firstIndex(where: { !$0.isNumber }), let index = Int(rest[..<digits]) else { continue }
            if let field = row.fields[String(rest[digits...])] { return "\(row.name) \(index + row.first): \(field)" }
        }
        return Self.inputLabels[input] ?? input
    }

    static let inputLabels: [String: String] = [
        "service": "Service", "title": "Title", "body": "Message", "userKeys": "User keys", "segment": "Segment name", "match": "Devices matching",
        "sendAt": "Send at", "timeZone": "Time zone", "validHours": "Valid for (hours)", "template": "Template", "priority": "Priority",
        "throttle": "At most per second", "proofUserKeys": "Proof recipients", "variantAName": "Variant 1: name", "variantAShare": "Variant 1: share",
        "iosBadge": "iOS badge", "iosSound": "iOS sound", "iosCategory": "iOS category", "iosThreadId": "iOS thread",
        "iosInterruptionLevel": "iOS interruption level", "androidMode": "Android message", "androidChannel": "Android channel",
        "androidImage": "Android image URL", "androidSound": "Android sound", "androidColor": "Android colour", "androidClickAction": "Android click action",
    ]

    /// The refusals by the input they concern (several for one input joined by "; ").
    package func problemsByInput(_ problems: [String]) -> [String: String] {
        var byInput: [String: String] = [:]
        for problem in problems {
            guard let input = input(forProblem: problem) else { continue }
            byInput[input] = byInput[input].map { "\($0); \(problem)" } ?? problem
        }
        return byInput
    }

    /// A field the console itself cannot turn into the request (shown as the form's problem).
    package struct ComposerProblem: Error, CustomStringConvertible {
        package var description: String
    }
}
