import Foundation
import PushEvents
import PushRegistration
import PushTestSupport
import Testing

@Suite("SDK registration endpoints against the real broker and PostgreSQL", .serialized)
struct RegistrationEndpointTests {
    static func iosBody(key: String, token: String) -> String {
        SDKRegistrationBody.ios
            .replacingOccurrences(of: "mobileAppUuid=integrationKey", with: "mobileAppUuid=\(key)")
            .replacingOccurrences(of: "registrationToken=70757368546f6b656e", with: "registrationToken=\(token)")
    }

    static func androidBody(key: String, token: String) -> String {
        SDKRegistrationBody.android
            .replacingOccurrences(of: "mobileAppUuid=testIntegrationKey", with: "mobileAppUuid=\(key)")
            .replacingOccurrences(of: "registrationToken=testToken", with: "registrationToken=\(token)")
    }

    static func hexToken() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    @Test("the SDKs' literal requests end as rows with every field and param")
    func literalRequests() async throws {
        try await RegistrationHarness.run { harness in
            let ios = try await harness.defineApp(platform: .ios)
            let android = try await harness.defineApp(platform: .android)
            let iosToken = Self.hexToken()
            let androidToken = "fcm:\(UUID().uuidString)"

            let iosAnswer = try await harness.post("/nms/mobile/1/registerIOS.jssp", body: Self.iosBody(key: ios.integrationKey, token: iosToken))
            #expect(iosAnswer.status == 200)
            let androidAnswer = try await harness.post(
                "/nms/mobile/1/registerAndroid.jssp", body: Self.androidBody(key: android.integrationKey, token: androidToken))
            #expect(androidAnswer.status == 200)

            try await eventually("both rows projected") {
                let iosRow = try await harness.subscription(appId: ios.appId, token: iosToken)
                let androidRow = try await harness.subscription(appId: android.appId, token: androidToken)
                return iosRow != nil && androidRow != nil
            }
            let iosRow = try #require(try await harness.subscription(appId: ios.appId, token: iosToken))
            #expect(iosRow["platform"] == "ios")
            #expect(iosRow["user_key"] == "userkey")
            #expect(iosRow["device_name"] == "My iPhone")
            #expect(iosRow["device_brand"] == "Apple")
            #expect(iosRow["os_version"] == "iOS 17.0")
            #expect(iosRow["os_language"] == "en-US")
            #expect(iosRow["params"] == #"{"email": "email@email.com", "userPoints": "3233"}"#)
            #expect(iosRow["disabled"] == "false")

            let androidRow = try #require(try await harness.subscription(appId: android.appId, token: androidToken))
            #expect(androidRow["device_imei"] == "12345")
            #expect(androidRow["os_version"] == "mockOSName mockOSVersion")
            #expect(androidRow["params"] == #"{"key": "value"}"#)
        }
    }

    @Test("fields in the query string, '+' for spaces, an empty userKey, kept parameters only")
    func variants() async throws {
        try await RegistrationHarness.run { harness in
            let app = try await harness.defineApp(platform: .ios, keptParameters: ["email"])
            let token = Self.hexToken()
            let answer = try await harness.post(
                "/nms/mobile/1/registerIOS.jssp",
                body:
                    "userKey=&deviceName=Ada+Phone&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22a%40b.c%22%2F%3E%3Cparam%20name%3D%22dropped%22%20value%3D%22x%22%2F%3E%3C%2FadditionalParams%3E",
                query: "registrationToken=\(token.uppercased())&mobileAppUuid=\(app.integrationKey)"
            )
            #expect(answer.status == 200, "\(answer.body)")
            try await eventually("row projected") { try await harness.subscription(appId: app.appId, token: token) != nil }
            let row = try #require(try await harness.subscription(appId: app.appId, token: token))
            #expect(row["device_name"] == "Ada Phone")
            #expect(row["user_key"] == "")
            #expect(row["params"] == #"{"email": "a@b.c"}"#, "parameters not kept by the app's mapping are dropped")
        }
    }

    @Test("declared parameter types are checked: a value that does not fit is a 400 naming the parameter")
    func typedParameters() async throws {
        try await RegistrationHarness.run { harness in
            // An app declaring typed parameters, through the admin API.
            let name = "typed-\(UUID().uuidString.prefix(8).lowercased())"
            #expect(try await harness.admin("POST", "/services", json: #"{"name": "\#(name)", "label": "x"}"#).status == 201)
            let created = try await harness.admin(
                "POST", "/services/\(name)/apps",
                json:
                    #"{"platform": "android", "label": "t", "fcmProjectId": "p", "subscriptionParameters": [{"name": "points", "type": "integer"}, {"name": "vip", "type": "boolean"}, {"name": "born", "type": "date"}]}"#
            )
            let object = try #require(try JSONSerialization.jsonObject(with: Data(created.body.utf8)) as? [String: Any])
            let key = try #require(object["integrationKey"] as? String)
            func params(_ pairs: [(String, String)]) -> String {
                let xml = "<additionalParameters>" + pairs.map { "<param name=\"\($0.0)\" value=\"\($0.1)\"/>" }.joined() + "</additionalParameters>"
                return xml.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            }
            let good = try await harness.post(
                "/nms/mobile/1/registerAndroid.jssp",
                body:
                    "registrationToken=t-\(UUID())&mobileAppUuid=\(key)&additionalParams=\(params([("points", "42"), ("vip", "true"), ("born", "1990-04-01")]))"
            )
            #expect(good.status == 200, "\(good.body)")
            for (pair, reason) in [
                (("points", "many"), "points must be an integer"), (("vip", "maybe"), "vip must be a boolean"), (("born", "yesterday"), "born must be a date"),
            ] {
                let answer = try await harness.post(
                    "/nms/mobile/1/registerAndroid.jssp", body: "registrationToken=t-\(UUID())&mobileAppUuid=\(key)&additionalParams=\(params([pair]))")
                #expect(answer.status == 400)
                #expect(answer.body.contains(reason), "\(answer.body)")
            }
        }
    }

    @Test("fields and params with COPY's and JSON's special characters (backslash, tab, newline, quote, non-ASCII) end in the row as sent")
    func specialCharacters() async throws {
        try await RegistrationHarness.run { harness in
            let android = try await harness.defineApp(platform: .android)
            let token = "fcm:\(UUID().uuidString)"
            let name = "Zoë's \\ \"phone\"\t1\n2\r3 📱"
            let value = #"C:\temp\n "quoted"\#t\#n😀"#
            let xml =
                "<additionalParameters><param name=\"path\" value=\"\(value.replacingOccurrences(of: "\"", with: "&quot;").replacingOccurrences(of: "\t", with: "&#9;").replacingOccurrences(of: "\n", with: "&#10;"))\"/></additionalParameters>"
            var allowed = CharacterSet.alphanumerics
            allowed.remove(charactersIn: "\u{80}"..."\u{10FFFF}")
            func encoded(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: allowed) ?? "" }
            let answer = try await harness.post(
                "/nms/mobile/1/registerAndroid.jssp",
                body: "registrationToken=\(token)&mobileAppUuid=\(android.integrationKey)&deviceName=\(encoded(name))&additionalParams=\(encoded(xml))")
            #expect(answer.status == 200, "\(answer.body)")
            try await eventually("the row projected") { try await harness.subscription(appId: android.appId, token: token) != nil }
            let row = try #require(try await harness.subscription(appId: android.appId, token: token))
            #expect(row["device_name"] == name)
            let params = try #require(row["params"].flatMap { try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] })
            #expect(params == ["path": value])
        }
    }

    @Test("every refusal answers its status with a one-line reason and writes nothing")
    func refusals() async throws {
        try await RegistrationHarness.run(settings: RegistrationSettings(bodyLimit: 2_048)) { harness in
            let ios = try await harness.defineApp(platform: .ios)
            let android = try await harness.defineApp(platform: .android)
            let refusedToken = Self.hexToken()
            let cases: [(path: String, body: String, status: Int, reason: String)] = [
                ("registerIOS.jssp", Self.iosBody(key: "no-such-key-\(UUID())", token: refusedToken), 404, "unknown integration key"),
                ("registerIOS.jssp", Self.iosBody(key: "", token: refusedToken), 400, "mobileAppUuid"),
                ("registerIOS.jssp", Self.iosBody(key: ios.integrationKey, token: ""), 400, "registrationToken is missing"),
                ("registerIOS.jssp", Self.iosBody(key: ios.integrationKey, token: "xyz"), 400, "not an APNs device token"),
                (
                    "registerIOS.jssp", "registrationToken=\(refusedToken)&mobileAppUuid=\(ios.integrationKey)&additionalParams=%3Cbroken", 400,
                    "malformed additionalParams XML"
                ),
                (
                    "registerIOS.jssp", Self.iosBody(key: ios.integrationKey, token: refusedToken) + "&deviceName=My%00iPhone", 400,
                    "field deviceName contains a NUL character"
                ),
                (
                    "registerIOS.jssp",
                    "registrationToken=\(refusedToken)&mobileAppUuid=\(ios.integrationKey)&additionalParams=%3CadditionalParams%3E%3Cparam%20name%3D%22email%22%20value%3D%22a%26%230%3Bb%22%2F%3E%3C%2FadditionalParams%3E",
                    400, "NUL character"
                ),
                ("registerAndroid.jssp", Self.androidBody(key: ios.integrationKey, token: refusedToken), 400, "belongs to an iOS app"),
                ("registerIOS.jssp", Self.iosBody(key: android.integrationKey, token: refusedToken), 400, "belongs to an Android app"),
                (
                    "registerIOS.jssp", Self.iosBody(key: ios.integrationKey, token: refusedToken) + "&deviceModel=" + String(repeating: "x", count: 4_000),
                    413, "body larger than 2048 bytes"
                ),
            ]
            for refusal in cases {
                let answer = try await harness.post("/nms/mobile/1/\(refusal.path)", body: refusal.body)
                #expect(answer.status == refusal.status, "\(refusal.reason): \(answer.body)")
                #expect(answer.body.contains(refusal.reason), "\(answer.body)")
                #expect(answer.body.split(separator: "\n").count == 1, "one line")
                #expect(!answer.body.contains(refusedToken), "the reason never echoes the token")
            }
            // A valid registration after the refusals: once it is projected, nothing else is.
            let sentinel = Self.hexToken()
            #expect(try await harness.post("/nms/mobile/1/registerIOS.jssp", body: Self.iosBody(key: ios.integrationKey, token: sentinel)).status == 200)
            try await eventually("sentinel projected") { try await harness.subscription(appId: ios.appId, token: sentinel) != nil }
            #expect(try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE registration_token = \(refusedToken)") == 0)
            #expect(try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id IN (\(ios.appId), \(android.appId))") == 1)
        }
    }

    @Test("the same token registered concurrently many times ends as one row")
    func concurrentRegistrations() async throws {
        try await RegistrationHarness.run { harness in
            let app = try await harness.defineApp(platform: .android)
            let token = "fcm:\(UUID().uuidString)"
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for index in 0..<40 {
                    group.addTask {
                        try await harness.post(
                            "/nms/mobile/1/registerAndroid.jssp",
                            body: "registrationToken=\(token)&mobileAppUuid=\(app.integrationKey)&userKey=user-\(index)"
                        ).status
                    }
                }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.allSatisfy { $0 == 200 })
            try await eventually("row projected") { try await harness.subscription(appId: app.appId, token: token) != nil }
            try await Task.sleep(for: .seconds(1))
            #expect(try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(app.appId)") == 1)
        }
    }

    @Test("quarantine sets disabled; a re-registration clears it; an invalidation older than the registration is ignored")
    func quarantine() async throws {
        try await RegistrationHarness.run { harness in
            let app = try await harness.defineApp(platform: .ios)
            let token = Self.hexToken()
            let path = "/nms/mobile/1/registerIOS.jssp"
            #expect(try await harness.post(path, body: Self.iosBody(key: app.integrationKey, token: token)).status == 200)
            try await eventually("registered") { try await harness.subscription(appId: app.appId, token: token) != nil }

            try await harness.disable(appId: app.appId, token: token, reason: "Unregistered", invalidSince: Date())
            try await eventually("disabled") { try await harness.subscription(appId: app.appId, token: token)?["disabled"] == "true" }
            #expect(try await harness.subscription(appId: app.appId, token: token)?["disabled_reason"] == "Unregistered")

            #expect(try await harness.post(path, body: Self.iosBody(key: app.integrationKey, token: token)).status == 200)
            try await eventually("re-enabled") { try await harness.subscription(appId: app.appId, token: token)?["disabled"] == "false" }

            // The provider's verdict predates the last registration: ignored.
            try await harness.disable(appId: app.appId, token: token, reason: "Unregistered", invalidSince: Date(timeIntervalSinceNow: -3_600))
            let sentinel = Self.hexToken()
            #expect(try await harness.post(path, body: Self.iosBody(key: app.integrationKey, token: sentinel)).status == 200)
            try await eventually("sentinel projected") { try await harness.subscription(appId: app.appId, token: sentinel) != nil }
            #expect(try await harness.subscription(appId: app.appId, token: token)?["disabled"] == "false")
        }
    }

    @Test("subscriptions disabled longer than the purge delay are removed by a SubscriptionPurged event; recent ones stay")
    func purge() async throws {
        var settings = RegistrationSettings()
        settings.purgeInterval = .seconds(1)
        try await RegistrationHarness.run(settings: settings) { harness in
            let app = try await harness.defineApp(platform: .ios)
            let old = Self.hexToken()
            let recent = Self.hexToken()
            let day: TimeInterval = 86_400
            try await harness.publishRegistration(appId: app.appId, token: old, registeredAt: Date(timeIntervalSinceNow: -50 * day))
            try await harness.publishRegistration(appId: app.appId, token: recent, registeredAt: Date(timeIntervalSinceNow: -50 * day))
            // These version-1 registrations are keyed by token, the version-2 quarantine by digest
            // (another partition): wait for the rows before quarantining them.
            try await eventually("registered") {
                let oldRow = try await harness.subscription(appId: app.appId, token: old)
                let recentRow = try await harness.subscription(appId: app.appId, token: recent)
                return oldRow != nil && recentRow != nil
            }
            // Disabled here 40 and 2 days ago (the events' time), the provider's verdicts older still;
            // the old one by a version-1 event (token in clear, still read), the recent one by version 2.
            try await harness.disable(
                appId: app.appId, token: old, reason: "Unregistered", invalidSince: Date(timeIntervalSinceNow: -45 * day),
                disabledAt: Date(timeIntervalSinceNow: -40 * day), version: 1)
            try await harness.disable(
                appId: app.appId, token: recent, reason: "Unregistered", invalidSince: Date(timeIntervalSinceNow: -45 * day),
                disabledAt: Date(timeIntervalSinceNow: -2 * day))
            try await eventually("the old quarantined subscription is purged") {
                let recentRow = try await harness.subscription(appId: app.appId, token: recent)
                let oldRow = try await harness.subscription(appId: app.appId, token: old)
                return recentRow?["disabled"] == "true" && oldRow == nil
            }
            try await Task.sleep(for: .seconds(2))
            #expect(try await harness.subscription(appId: app.appId, token: recent)?["disabled"] == "true", "disabled 2 days ago: kept")

            // The purge is version 2: keyed by the device's digest, no token anywhere in the record.
            let purges = try await harness.records(harness.configuration.topics.subscriptions.name).filter {
                String(decoding: $0.value, as: UTF8.self).contains("\"SubscriptionPurged\"")
            }
            #expect(purges.count == 1)
            let purge = try #require(purges.first)
            #expect(String(decoding: purge.key ?? [], as: UTF8.self) == TokenDigest.subscriptionKey(appId: app.appId, tokenDigest: TokenDigest.of(old)))
            #expect(!String(decoding: purge.value, as: UTF8.self).contains(old))
            #expect(String(decoding: purge.value, as: UTF8.self).contains(#""version":2"#))
        }
    }

    /// One request per 10 s refills a rate-limit bucket: the tests' requests that must find it
    /// spent come well within that on a loaded machine (at 1 a second, three registrations that
    /// each wait for the broker could take long enough to refill it).
    static let slowRate = 0.1

    @Test("over the per-address rate limit: 429 with Retry-After")
    func rateLimit() async throws {
        try await RegistrationHarness.run(settings: RegistrationSettings(ratePerAddress: Self.slowRate, burstPerAddress: 3)) { harness in
            let app = try await harness.defineApp(platform: .ios)
            var statuses: [Int] = []
            var retryAfter: String?
            for _ in 0..<6 {
                let answer = try await harness.post("/nms/mobile/1/registerIOS.jssp", body: Self.iosBody(key: app.integrationKey, token: Self.hexToken()))
                statuses.append(answer.status)
                if answer.status == 429 { retryAfter = answer.retryAfter }
            }
            #expect(statuses.prefix(3).allSatisfy { $0 == 200 })
            #expect(statuses.contains(429))
            #expect(retryAfter.flatMap(Int.init).map { $0 >= 1 } == true)
        }
    }

    @Test(
        "behind a trusted proxy the per-address limit counts the client X-Forwarded-For names; from any other peer the header changes nothing"
    )
    func rateLimitBehindProxy() async throws {
        let path = "/nms/mobile/1/registerIOS.jssp"
        var trusting = RegistrationSettings(ratePerAddress: Self.slowRate, burstPerAddress: 1)
        trusting.trustedProxies = ["127.0.0.1"]
        try await RegistrationHarness.run(settings: trusting) { harness in
            let app = try await harness.defineApp(platform: .ios)
            func post(from client: String) async throws -> Int {
                try await harness.post(path, body: Self.iosBody(key: app.integrationKey, token: Self.hexToken()), headers: ["X-Forwarded-For": client])
                    .status
            }
            #expect(try await post(from: "203.0.113.7") == 200)
            #expect(try await post(from: "203.0.113.8") == 200, "another client behind the same proxy has its own budget")
            #expect(try await post(from: "203.0.113.7") == 429, "the first client's budget is spent")
            // The client cannot choose its address: what it wrote left of the proxy's entry is ignored.
            #expect(try await post(from: "198.51.100.1, 203.0.113.7") == 429)
        }
        try await RegistrationHarness.run(settings: RegistrationSettings(ratePerAddress: Self.slowRate, burstPerAddress: 1)) { harness in
            let app = try await harness.defineApp(platform: .ios)
            let first = try await harness.post(
                path, body: Self.iosBody(key: app.integrationKey, token: Self.hexToken()), headers: ["X-Forwarded-For": "203.0.113.7"])
            let second = try await harness.post(
                path, body: Self.iosBody(key: app.integrationKey, token: Self.hexToken()), headers: ["X-Forwarded-For": "203.0.113.8"])
            #expect(first.status == 200)
            #expect(second.status == 429, "an untrusted peer's X-Forwarded-For is ignored")
        }
    }

    @Test("the per-app rate limit counts only registrations whose key the catalog knows: made-up keys get 404, never 429, and spend no app's budget")
    func appRateLimitAfterKeyCheck() async throws {
        try await RegistrationHarness.run(settings: RegistrationSettings(ratePerKey: Self.slowRate, burstPerKey: 2)) { harness in
            let app = try await harness.defineApp(platform: .ios)
            // One made-up key, again and again (a probe): always "unknown", no bucket kept for it.
            let key = UUID().uuidString.lowercased()
            var unknown: [Int] = []
            for _ in 0..<5 {
                unknown.append(try await harness.post("/nms/mobile/1/registerIOS.jssp", body: Self.iosBody(key: key, token: Self.hexToken())).status)
            }
            #expect(unknown == [404, 404, 404, 404, 404], "unknown keys: \(unknown)")
            var known: [Int] = []
            for _ in 0..<4 {
                known.append(
                    try await harness.post("/nms/mobile/1/registerIOS.jssp", body: Self.iosBody(key: app.integrationKey, token: Self.hexToken())).status)
            }
            #expect(known.prefix(2) == [200, 200], "the app's burst is whole: \(known)")
            #expect(known.contains(429), "then the app's own limit: \(known)")
        }
    }
}
