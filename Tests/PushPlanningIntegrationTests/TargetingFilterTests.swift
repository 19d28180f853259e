import Foundation
import PostgresNIO
import PushEvents
import PushPlanning
import PushTestSupport
import Testing

/// `audience.filter` against the real planner and database: for 10,000 subscriptions with random
/// parameters and device fields, the audience the planner counts for each of 50 random condition
/// trees is the one an evaluator written here from docs/delivery-requests.md ("Targeting")
/// computes; a delivery with a filter sends to exactly the devices it matches.
@Suite("Targeting filter: condition trees against an independent evaluator", .serialized)
struct TargetingFilterTests {
    /// A subscription as the evaluator sees it.
    struct Row {
        var app: Int
        var token: String
        var params: [String: String]
        var osName: String
        var osVersion: String
        var osLanguage: String
        var userKey: String
        var registeredAt: Date
        var updatedAt: Date
        var disabled: Bool
        var unsubscribed: Bool
        /// The parameters read as their declared types (absent when not of the type), and the
        /// OS version's parts: parsed once, not per tree (the regexes are slow in debug builds).
        var typed: [String: Any] = [:]
        var version: [Int]?

        mutating func parse(_ evaluator: Evaluator) {
            for (name, raw) in params {
                switch Evaluator.typeOf(name) {
                case "integer", "decimal": typed[name] = evaluator.number(raw)
                case "boolean": typed[name] = evaluator.boolean(raw)
                case "date": typed[name] = evaluator.day(raw)
                default: typed[name] = raw
                }
            }
            version = evaluator.version(osVersion)
        }
    }

    /// A small deterministic generator (the failing seed can be replayed).
    struct Random {
        var state: UInt64
        mutating func next() -> UInt64 {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            var x = state
            x ^= x >> 33
            x = x &* 0xff51_afd7_ed55_8ccd
            x ^= x >> 33
            return x
        }
        mutating func below(_ n: Int) -> Int { Int(next() % UInt64(n)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    }

    static let declared: [String: String] = ["tier": "string", "age": "integer", "score": "decimal", "vip": "boolean", "since": "date"]
    static let pools: [String: [String]] = [
        "tier": ["gold", "silver", "bronze", "Gold", "platinum", ""],
        "age": ["18", "25", "33", "40", "67", "-3", "abc", "+21"],
        "score": ["0.5", "1.25", "3", "9.75", "-2.5", "1e1", "n/a"],
        "vip": ["true", "false", "1", "0", "TRUE", "yes"],
        "since": ["2024-01-15", "2025-06-30", "2026-02-01", "2026-11-20", "2026-11-29T10:00:00Z", "someday"],
        "city": ["Lisbon", "Porto", "Paris", "Berlin", "lisbon"],
    ]
    static let osVersions = ["iOS 16.4", "iOS 17.0", "17.2.1", "iOS 17.2", "18", "Android 13", "14", "", "beta", "iOS 17.10"]
    static let languages = ["en-US", "fr-FR", "fr", "de-DE", "pt-PT", ""]

    // MARK: the evaluator (docs/delivery-requests.md "Targeting", written apart from the planner)

    struct Evaluator {
        var apps: [PlanningHarness.TestApp]
        var reference: Date

        func number(_ text: String?) -> Double? {
            guard let text, text.wholeMatch(of: /[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?/) != nil else { return nil }
            return Double(text)
        }
        func boolean(_ text: String?) -> Bool? {
            switch text?.lowercased() {
            case "true", "1": true
            case "false", "0": false
            default: nil
            }
        }
        func day(_ text: String?) -> String? {
            guard let text, text.prefix(10).wholeMatch(of: /[0-9]{4}-[0-9]{2}-[0-9]{2}/) != nil else { return nil }
            return String(text.prefix(10))
        }
        func version(_ text: String?) -> [Int]? {
            guard let text, let match = text.firstMatch(of: /[0-9]{1,9}(\.[0-9]{1,9})*/) else { return nil }
            let parts = match.output.0.split(separator: ".").prefix(4).map { Int($0)! }
            return parts + Array(repeating: 0, count: 4 - parts.count)
        }
        func less<T: Comparable>(_ a: T, _ b: T) -> Bool { a < b }
        func bytesLess(_ a: String, _ b: String) -> Bool { Array(a.utf8).lexicographicallyPrecedes(Array(b.utf8)) }

        /// Compares by the condition's kind; nil when the row has no value of that kind.
        func order(_ a: Any, _ b: Any) -> Int {
            switch (a, b) {
            case (let x as Double, let y as Double): x < y ? -1 : x == y ? 0 : 1
            case (let x as String, let y as String): bytesLess(x, y) ? -1 : x == y ? 0 : 1
            case (let x as [Int], let y as [Int]): x.lexicographicallyPrecedes(y) ? -1 : x == y ? 0 : 1
            case (let x as Date, let y as Date): x < y ? -1 : x == y ? 0 : 1
            case (let x as Bool, let y as Bool): x == y ? 0 : 1
            default: 1
            }
        }

        func matches(_ node: [String: Any], _ row: Row) -> Bool {
            if let nodes = node["all"] as? [[String: Any]] { return nodes.allSatisfy { matches($0, row) } }
            if let nodes = node["any"] as? [[String: Any]] { return nodes.contains { matches($0, row) } }
            if let child = node["not"] as? [String: Any] { return !matches(child, row) }
            let op = node["op"] as! String
            let kind: String
            let actual: Any?
            var convert: (String) -> Any? = { $0 }
            if let name = node["param"] as? String {
                kind = Self.typeOf(name)
                actual = row.typed[name]
                switch kind {
                case "integer", "decimal": convert = { Double($0) }
                case "boolean": convert = { boolean($0) }
                default: break
                }
            } else {
                let field = node["device"] as! String
                kind = field
                func present(_ s: String) -> String? { s.isEmpty ? nil : s }
                switch field {
                case "app": actual = apps[row.app].integrationKey
                case "platform": actual = apps[row.app].platform
                case "osName": actual = present(row.osName)
                case "osVersion":
                    actual = row.version
                    convert = { version($0) }
                case "osLanguage": actual = present(row.osLanguage)
                case "userKey": actual = present(row.userKey)
                case "registeredAt":
                    actual = row.registeredAt
                    convert = { try? Date.ISO8601FormatStyle().parse($0) }
                default:
                    actual = row.updatedAt
                    convert = { try? Date.ISO8601FormatStyle().parse($0) }
                }
            }
            let value = (node["value"] as? String).flatMap(convert)
            let values = (node["values"] as? [String])?.compactMap(convert) ?? []
            if op == "exists" { return actual != nil }
            if op == "not exists" { return actual == nil }
            guard let actual else { return false }
            switch op {
            case "=": return value.map { order(actual, $0) == 0 } ?? false
            case "!=": return value.map { order(actual, $0) != 0 } ?? false
            case "<": return value.map { order(actual, $0) < 0 } ?? false
            case "<=": return value.map { order(actual, $0) <= 0 } ?? false
            case ">": return value.map { order(actual, $0) > 0 } ?? false
            case ">=": return value.map { order(actual, $0) >= 0 } ?? false
            case "between": return order(actual, values[0]) >= 0 && order(actual, values[1]) <= 0
            case "in": return values.contains { order(actual, $0) == 0 }
            case "not in": return !values.contains { order(actual, $0) == 0 }
            case "starts with": return (actual as! String).hasPrefix(node["value"] as! String)
            default:  // in the last N days
                let days = Double((node["value"] as! String).split(separator: " ")[0])!
                let start = reference.addingTimeInterval(-days * 86_400)
                if let date = actual as? Date { return date >= start && date <= reference }
                let low = String(start.formatted(.iso8601.year().month().day()).prefix(10))
                let high = String(reference.formatted(.iso8601.year().month().day()).prefix(10))
                let text = actual as! String
                return !bytesLess(text, low) && !bytesLess(high, text)
            }
        }

        static func typeOf(_ name: String) -> String { declared[name] ?? "string" }
    }

    // MARK: random trees over the data's own values

    static func randomCondition(_ random: inout Random, apps: [PlanningHarness.TestApp], reference: Date) -> [String: Any] {
        func some(_ pool: [String]) -> [String] { (0..<(1 + random.below(3))).map { _ in random.pick(pool) } }
        if random.chance(55) {
            let name = random.pick(Array(pools.keys).sorted())
            let type = Evaluator.typeOf(name)
            let pool = pools[name]!.filter { value in
                switch type {
                case "integer", "decimal": Evaluator(apps: [], reference: reference).number(value) != nil
                case "boolean": Evaluator(apps: [], reference: reference).boolean(value) != nil
                case "date": Evaluator(apps: [], reference: reference).day(value) != nil
                default: true
                }
            }.map { type == "date" ? String($0.prefix(10)) : $0 }
            let ops: [String] =
                switch type {
                case "string": ["=", "!=", "in", "not in", "<", ">=", "between", "starts with", "exists", "not exists"]
                case "boolean": ["=", "!=", "exists", "not exists"]
                case "date": ["=", "<", ">=", "between", "in the last", "exists", "not exists"]
                default: ["=", "!=", "in", "not in", "<", "<=", ">", ">=", "between", "exists", "not exists"]
                }
            return condition(["param": name], op: random.pick(ops), pool: pool, &random, type: type)
        }
        let field = random.pick(["app", "platform", "osName", "osVersion", "osLanguage", "userKey", "registeredAt", "updatedAt"])
        switch field {
        case "app":
            return condition(["device": field], op: random.pick(["=", "!=", "in", "not in"]), pool: apps.map(\.integrationKey), &random, type: "string")
        case "platform": return condition(["device": field], op: random.pick(["=", "!=", "in"]), pool: ["ios", "android"], &random, type: "string")
        case "osVersion":
            return condition(
                ["device": field], op: random.pick(["=", "<", ">=", "between", "exists", "not exists"]), pool: ["16", "17", "17.2", "17.10", "18", "13.0"],
                &random, type: "version")
        case "osLanguage", "osName", "userKey":
            let pool = field == "osLanguage" ? languages.filter { !$0.isEmpty } + ["fr", "en"] : field == "osName" ? ["iOS", "Android"] : ["u1", "u2", "u"]
            return condition(
                ["device": field], op: random.pick(["=", "!=", "in", "starts with", "exists", "not exists", "<"]), pool: pool, &random, type: "string")
        default:
            let days = [1, 3, 10, 30, 60]
            let pool = days.map { reference.addingTimeInterval(-Double($0) * 86_400 + 1_234).formatted(.iso8601) }
            return condition(["device": field], op: random.pick(["<", ">=", "between", "in the last"]), pool: pool, &random, type: "timestamp")
        }
        func condition(_ base: [String: Any], op: String, pool: [String], _ random: inout Random, type: String) -> [String: Any] {
            var node = base
            node["op"] = op
            switch op {
            case "exists", "not exists": break
            case "in", "not in": node["values"] = (0..<(1 + random.below(3))).map { _ in random.pick(pool) }
            case "between":
                let a = random.pick(pool)
                let b = random.pick(pool)
                let ev = Evaluator(apps: [], reference: reference)
                let conv: (String) -> Any =
                    switch type {
                    case "integer", "decimal": { Double($0)! }
                    case "version": { ev.version($0)! }
                    case "timestamp": { try! Date.ISO8601FormatStyle().parse($0) }
                    default: { $0 }
                    }
                node["values"] = ev.order(conv(a), conv(b)) <= 0 ? [a, b] : [b, a]
            case "in the last": node["value"] = "\(random.pick([1, 7, 30, 400])) days"
            case "starts with": node["value"] = String(random.pick(pool).prefix(2))
            default: node["value"] = random.pick(pool)
            }
            return node
        }
    }

    static func randomTree(_ random: inout Random, depth: Int, apps: [PlanningHarness.TestApp], reference: Date) -> [String: Any] {
        guard depth < 3, random.chance(depth == 0 ? 85 : 35) else { return randomCondition(&random, apps: apps, reference: reference) }
        switch random.below(5) {
        case 0: return ["not": randomTree(&random, depth: depth + 1, apps: apps, reference: reference)]
        case 1, 2: return ["any": (0..<(2 + random.below(3))).map { _ in randomTree(&random, depth: depth + 1, apps: apps, reference: reference) }]
        default: return ["all": (0..<(2 + random.below(3))).map { _ in randomTree(&random, depth: depth + 1, apps: apps, reference: reference) }]
        }
    }

    // MARK: the data

    static func makeRows(_ random: inout Random, count: Int, apps: Int, reference: Date) -> [Row] {
        let evaluator = Evaluator(apps: [], reference: reference)
        return (0..<count).map { n in
            var params: [String: String] = [:]
            for (name, pool) in pools.sorted(by: { $0.key < $1.key }) where random.chance(70) { params[name] = random.pick(pool) }
            let registered = reference.addingTimeInterval(-Double(random.below(90 * 86_400)) - 3_600).timeIntervalSince1970.rounded(.down)
            let updated = min(registered + Double(random.below(40 * 86_400)), reference.timeIntervalSince1970 - 60)
            var row = Row(
                app: n % apps, token: String(format: "%064x", n + 1), params: params,
                osName: random.pick(["iOS", "Android", ""]), osVersion: random.pick(osVersions), osLanguage: random.pick(languages),
                userKey: random.chance(80) ? "u\(random.below(5_000))" : "", registeredAt: Date(timeIntervalSince1970: registered),
                updatedAt: Date(timeIntervalSince1970: max(updated, registered)), disabled: random.chance(8), unsubscribed: random.chance(4))
            row.parse(evaluator)
            return row
        }
    }

    static func insert(_ rows: [Row], apps: [PlanningHarness.TestApp], into h: PlanningHarness) async throws {
        let types = String(decoding: try JSONSerialization.data(withJSONObject: declared.map { ["name": $0.key, "type": $0.value] }), as: UTF8.self)
        for app in apps {
            try await h.postgres.query("UPDATE push.apps SET subscription_parameters = \(types)::jsonb WHERE app_id = \(app.appId)", logger: h.logger)
        }
        let params = try rows.map { String(decoding: try JSONSerialization.data(withJSONObject: $0.params), as: UTF8.self) }
        try await h.postgres.query(
            """
            INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, os_name, os_version, os_language, params,
                                            registered_at, updated_at, disabled, disabled_reason, disabled_at, unsubscribed_at)
            SELECT a, t, p, u, n, v, l, j::jsonb, r, up, d, CASE WHEN d THEN 'Unregistered' END, CASE WHEN d THEN now() END, CASE WHEN un THEN now() END
            FROM unnest(\(rows.map { apps[$0.app].appId }), \(rows.map(\.token)), \(rows.map { apps[$0.app].platform }), \(rows.map(\.userKey)),
                        \(rows.map(\.osName)), \(rows.map(\.osVersion)), \(rows.map(\.osLanguage)), \(params), \(rows.map(\.registeredAt)),
                        \(rows.map(\.updatedAt)), \(rows.map(\.disabled)), \(rows.map(\.unsubscribed)))
                 AS x(a, t, p, u, n, v, l, j, r, up, d, un)
            """,
            logger: h.logger)
    }

    static func json(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]), as: UTF8.self)
    }

    @Test("50 random condition trees over 10,000 subscriptions: the preview's counts are the evaluator's")
    func randomTreesMatchTheEvaluator() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            // A send time in the future, whole seconds: the moment "in the last" counts back from.
            let reference = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + 3_600).rounded(.down))
            let seed = UInt64(ProcessInfo.processInfo.environment["TARGETING_SEED"] ?? "") ?? UInt64(Date().timeIntervalSince1970)
            var random = Random(state: seed)
            let rows = Self.makeRows(&random, count: 10_000, apps: service.apps.count, reference: reference)
            try await Self.insert(rows, apps: service.apps, into: h)
            let evaluator = Evaluator(apps: service.apps, reference: reference)
            var nonTrivial = 0
            for index in 0..<50 {
                let tree = Self.randomTree(&random, depth: 0, apps: service.apps, reference: reference)
                let filter = try Self.json(tree)
                let matched = rows.filter { evaluator.matches(tree, $0) }
                let targeted = matched.filter { !$0.disabled && !$0.unsubscribed }.count
                let document = requestJSON(
                    requestId: "filter-\(h.suffix)-\(index)", service: service.name, audience: #"{"filter": \#(filter)}"#, sendAt: reference.iso)
                let preview = try await DeliveryAdminTests.call(port: port, "POST", "/deliveries/preview?samples=0", body: document)
                #expect(preview.status == 200, "seed \(seed), tree \(index): \(String(decoding: preview.body, as: UTF8.self))")
                #expect(preview.json["targeted"] as? Int == targeted, "seed \(seed), tree \(index) \(filter)")
                #expect(preview.json["excluded"] as? Int == matched.count - targeted, "seed \(seed), tree \(index) \(filter)")
                if targeted > 0 && targeted < rows.count / 2 { nonTrivial += 1 }
            }
            #expect(nonTrivial >= 10, "seed \(seed): the trees select neither nobody nor everybody")
        }
    }

    @Test("a delivery with a filter is sent to exactly the devices it matches; a bad condition is refused by its path")
    func deliveryFollowsTheFilter() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            let reference = Date()
            var random = Random(state: 41)
            let rows = Self.makeRows(&random, count: 600, apps: service.apps.count, reference: reference)
            try await Self.insert(rows, apps: service.apps, into: h)
            let tree: [String: Any] = [
                "all": [
                    ["param": "age", "op": ">=", "value": "25"],
                    ["any": [["device": "osLanguage", "op": "starts with", "value": "fr"], ["device": "osVersion", "op": ">=", "value": "17.2"]]],
                    ["not": ["param": "vip", "op": "=", "value": "true"]],
                ]
            ]
            let expected = Set(
                rows.filter { !$0.disabled && !$0.unsubscribed && Evaluator(apps: service.apps, reference: reference).matches(tree, $0) }.map {
                    PlanningHarness.Device(appId: service.apps[$0.app].appId, tokenDigest: TokenDigest.of($0.token))
                })
            #expect(expected.count > 10)
            let requestId = "filter-send-\(h.suffix)"
            let submitted = try await DeliveryAdminTests.call(
                port: port, "POST", "/deliveries",
                body: requestJSON(requestId: requestId, service: service.name, audience: #"{"filter": \#(try Self.json(tree))}"#))
            #expect(submitted.status == 202, "\(String(decoding: submitted.body, as: UTF8.self))")
            let deliveryId = try await h.waitPlanned(requestId)
            let sent = Set(try await h.plannedMessages(deliveryId).map { PlanningHarness.Device(appId: $0.appId, tokenDigest: $0.tokenDigest) })
            #expect(sent == expected)

            let bad =
                #"{"filter": {"all": [{"param": "age", "op": ">", "value": "25"}, {"any": [{"device": "osVersion", "op": "starts with", "value": "17"}]}]}}"#
            let refused = try await DeliveryAdminTests.call(
                port: port, "POST", "/deliveries/preview", body: requestJSON(requestId: "filter-bad-\(h.suffix)", service: service.name, audience: bad))
            #expect(refused.status == 400)
            let reason = refused.json["error"] as? String ?? ""
            #expect(reason.hasPrefix("audience.filter.all[1].any[0].op 'starts with' does not apply to device field osVersion"), "\(reason)")
            let typed = #"{"filter": {"param": "age", "op": "<", "value": "old"}}"#
            let refusedType = try await DeliveryAdminTests.call(
                port: port, "POST", "/deliveries/preview", body: requestJSON(requestId: "filter-type-\(h.suffix)", service: service.name, audience: typed))
            #expect(refusedType.json["error"] as? String == "audience.filter.value must be a number")
        }
    }

    @Test("a request names a segment: its latest version (or the one named) targets, the delivery records the version; unknown or both refused")
    func segments() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            for app in service.apps { try await h.addSubscriptions(app, count: 10) }
            let serviceId = try await h.text("SELECT service_id::text FROM push.apps WHERE app_id = \(service.apps[0].appId)") ?? ""
            // The catalog projection's rows, as two SegmentDefined would leave them.
            for (version, filter) in [
                (1, #"{"param": "tier", "op": "=", "value": "gold"}"#),
                (2, #"{"all": [{"param": "tier", "op": "=", "value": "gold"}, {"device": "platform", "op": "=", "value": "ios"}]}"#),
            ] {
                try await h.postgres.query(
                    "INSERT INTO push.segments (service_id, name, version, filter, defined_at) VALUES (\(serviceId)::uuid, 'gold', \(version), \(filter)::jsonb, now())",
                    logger: h.logger)
            }
            func preview(_ audience: String) async throws -> DeliveryAdminTests.Answer {
                try await DeliveryAdminTests.call(
                    port: port, "POST", "/deliveries/preview?samples=0",
                    body: requestJSON(requestId: "seg-\(h.suffix)", service: service.name, audience: audience))
            }
            #expect(try await preview(#"{"segment": {"name": "gold"}}"#).json["targeted"] as? Int == 5, "version 2: gold on iOS")
            #expect(try await preview(#"{"segment": {"name": "gold", "version": 1}}"#).json["targeted"] as? Int == 10, "version 1: gold on both apps")
            let unknown = try await preview(#"{"segment": {"name": "silver"}}"#)
            #expect(unknown.status == 400)
            #expect(unknown.json["error"] as? String == "unknown segment 'silver' in service '\(service.name)'")
            let both = try await preview(#"{"segment": {"name": "gold"}, "filter": {"param": "tier", "op": "exists"}}"#)
            #expect(both.json["error"] as? String == "audience must have exactly one of all, userKeys, where, filter, segment")

            let requestId = "seg-send-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: requestId, service: service.name, audience: #"{"segment": {"name": "gold", "version": 1}}"#))
            let deliveryId = try await h.waitPlanned(requestId)
            #expect(try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") == 10)
            #expect(try await h.text("SELECT accepted->'audience'->'segment'->>'version' FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") == "1")
        }
    }
}
