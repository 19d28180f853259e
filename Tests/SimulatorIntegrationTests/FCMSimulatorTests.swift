import Foundation
import ProviderSimulatorCore
import Testing
import _CryptoExtras

@Suite("FCM simulator over HTTP/2 + TLS")
struct FCMSimulatorTests {
    static let project = "demo-project"

    /// One RSA-2048 service account for the whole suite (key generation is the slow part).
    static let account = try! Fixtures.ServiceAccount.make(project: Self.project)

    static func message(token: String = "device-token-1", data: String = #"{"_mId":"m-1","k":"v"}"#, android: String? = nil) -> String {
        let androidPart = android.map { #","android":\#($0)"# } ?? ""
        return #"{"message":{"token":"\#(token)","data":\#(data),"notification":{"title":"t","body":"b"}\#(androidPart)}}"#
    }

    /// Exchanges a fresh assertion for an access token.
    static func accessToken(_ client: H2TestClient, account: Fixtures.ServiceAccount = Self.account) async throws -> String {
        let response = try await client.send(
            "POST", "/token",
            headers: [("content-type", "application/x-www-form-urlencoded")],
            body: Fixtures.tokenForm(assertion: try account.assertion())
        )
        #expect(response.status == 200)
        return try #require(response.json?["access_token"] as? String)
    }

    static func send(_ client: H2TestClient, accessToken: String?, project: String = Self.project, body: String) async throws -> TestResponse {
        var headers: [(String, String)] = [("content-type", "application/json")]
        if let accessToken { headers.append(("authorization", "Bearer \(accessToken)")) }
        return try await client.send("POST", "/v1/projects/\(project)/messages:send", headers: headers, json: body)
    }

    @Test("token endpoint: a good assertion gets a Bearer token; bad signature, audience, scope, lifetime, issuer and grant type do not")
    func tokenEndpoint() async throws {
        try await Fixtures.startFCM(accounts: [Self.account]).run { simulator in
            let client = try await simulator.client()
            func exchange(_ assertion: String, grantType: String = FCMBehaviour.grantType) async throws -> TestResponse {
                try await client.send("POST", "/token", body: Fixtures.tokenForm(assertion: assertion, grantType: grantType))
            }
            let good = try await exchange(try Self.account.assertion())
            #expect(good.status == 200)
            #expect(good.json?["token_type"] as? String == "Bearer")
            #expect((good.json?["expires_in"] as? NSNumber)?.intValue == 3600)
            #expect((good.json?["access_token"] as? String)?.isEmpty == false)

            let otherKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let cases: [(String, String, String)] = [
                ("bad signature", try Self.account.assertion(signingKey: otherKey), "invalid_grant"),
                ("wrong audience", try Self.account.assertion(audience: "https://example.com/token"), "invalid_grant"),
                ("wrong scope", try Self.account.assertion(scope: "https://www.googleapis.com/auth/cloud-platform"), "invalid_scope"),
                ("exp two hours after iat", try Self.account.assertion(lifetime: 7200), "invalid_grant"),
                ("expired", try Self.account.assertion(issuedAt: Date().addingTimeInterval(-7200)), "invalid_grant"),
                (
                    "unknown issuer",
                    try Fixtures.ServiceAccount(key: Self.account.key, clientEmail: "x@y.iam.gserviceaccount.com", projectID: "y").assertion(), "invalid_grant"
                ),
                ("not a JWT", "abc", "invalid_request"),
            ]
            for (name, assertion, error) in cases {
                let response = try await exchange(assertion)
                #expect(response.status == 400, "\(name)")
                #expect(response.json?["error"] as? String == error, "\(name)")
                #expect((response.json?["error_description"] as? String)?.isEmpty == false, "\(name)")
            }
            let wrongGrant = try await exchange(try Self.account.assertion(), grantType: "client_credentials")
            #expect(wrongGrant.json?["error"] as? String == "unsupported_grant_type")
            await client.close()
        }
    }

    @Test("send with the access token: accepted, named, logged with data._mId; without a live token for the project: 401")
    func sendWithAccessToken() async throws {
        let other = try Fixtures.ServiceAccount.make(project: "other-project")
        try await Fixtures.startFCM(accounts: [Self.account, other]).run { simulator in
            let client = try await simulator.client()
            let accessToken = try await Self.accessToken(client)
            let accepted = try await Self.send(client, accessToken: accessToken, body: Self.message(android: #"{"priority":"high","ttl":"3.5s"}"#))
            #expect(accepted.status == 200)
            let name = try #require(accepted.json?["name"] as? String)
            #expect(name.hasPrefix("projects/\(Self.project)/messages/"))
            // Written as FCM writes it: the slashes not escaped, one member.
            #expect(String(decoding: accepted.body, as: UTF8.self) == #"{"name":"\#(name)"}"#)

            let logged = simulator.state.notifications(mId: "m-1")
            #expect(logged.count == 1)
            #expect(logged.first?.token == "device-token-1")
            #expect(logged.first?.id == name)
            #expect(logged.first?.project == Self.project)
            let byToken = try await client.send("GET", "/_control/log?token=device-token-1")
            #expect((byToken.json?["count"] as? NSNumber)?.intValue == 1)

            let validateOnly = try await Self.send(
                client, accessToken: accessToken,
                body: #"{"validate_only":true,"message":{"token":"t2","data":{"_mId":"m-2"}}}"#
            )
            #expect(validateOnly.status == 200)
            #expect(simulator.state.notifications(mId: "m-2").isEmpty)

            for (name, token, project) in [
                ("no token", nil, Self.project),
                ("unknown token", "ya29.forged", Self.project),
                ("token of another project", accessToken, "other-project"),
            ] as [(String, String?, String)] {
                let response = try await Self.send(client, accessToken: token, project: project, body: Self.message())
                #expect(response.status == 401, "\(name)")
                #expect((response.json?["error"] as? [String: Any])?["status"] as? String == "UNAUTHENTICATED", "\(name)")
            }
            await client.close()
        }
    }

    @Test("access tokens expire after the configured expires_in")
    func accessTokenExpiry() async throws {
        try await Fixtures.startFCM(accounts: [Self.account], tokenLifetime: 1).run { simulator in
            let client = try await simulator.client()
            let accessToken = try await Self.accessToken(client)
            #expect(try await Self.send(client, accessToken: accessToken, body: Self.message()).status == 200)
            try await Task.sleep(for: .milliseconds(1200))
            #expect(try await Self.send(client, accessToken: accessToken, body: Self.message()).status == 401)
            await client.close()
        }
    }

    @Test("token prefixes produce every FCM errorCode with its HTTP status (and Retry-After where FCM sends one)")
    func errorCodePaths() async throws {
        try await Fixtures.startFCM(accounts: [Self.account]).run { simulator in
            let client = try await simulator.client()
            let accessToken = try await Self.accessToken(client)
            let cases: [(prefix: String, status: Int, errorCode: String, googleStatus: String, retryAfter: Bool)] = [
                ("unreg", 404, "UNREGISTERED", "NOT_FOUND", false),
                ("mismatch", 403, "SENDER_ID_MISMATCH", "PERMISSION_DENIED", false),
                ("invalid", 400, "INVALID_ARGUMENT", "INVALID_ARGUMENT", false),
                ("quota", 429, "QUOTA_EXCEEDED", "RESOURCE_EXHAUSTED", false),
                ("unavail", 503, "UNAVAILABLE", "UNAVAILABLE", true),
                ("internal", 500, "INTERNAL", "INTERNAL", false),
                ("thirdparty", 401, "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED", false),
            ]
            for expected in cases {
                let response = try await Self.send(client, accessToken: accessToken, body: Self.message(token: "\(expected.prefix)-abc"))
                #expect(response.status == expected.status, "\(expected.prefix)")
                #expect(response.fcmErrorCode == expected.errorCode, "\(expected.prefix)")
                let error = response.json?["error"] as? [String: Any]
                #expect(error?["status"] as? String == expected.googleStatus, "\(expected.prefix)")
                #expect((error?["code"] as? NSNumber)?.intValue == expected.status, "\(expected.prefix)")
                let details = error?["details"] as? [[String: Any]]
                #expect(details?.first?["@type"] as? String == "type.googleapis.com/google.firebase.fcm.v1.FcmError")
                #expect((response.headers.first(name: "retry-after") != nil) == expected.retryAfter, "\(expected.prefix)")
            }
            if let message =
                (try await Self.send(client, accessToken: accessToken, body: Self.message(token: "invalid-x"))
                .json?["error"] as? [String: Any])?["message"] as? String
            {
                #expect(message.contains("registration token"))
            }
            #expect(simulator.state.notifications().isEmpty)
            await client.close()
        }
    }

    @Test("message rejections: targets, reserved keys, non-string data, ttl, priority, size")
    func messageRejections() async throws {
        try await Fixtures.startFCM(accounts: [Self.account]).run { simulator in
            let client = try await simulator.client()
            let accessToken = try await Self.accessToken(client)
            let big = String(repeating: "x", count: 4100)
            let cases: [(String, String)] = [
                ("no target", #"{"message":{"data":{"a":"b"}}}"#),
                ("token and topic", #"{"message":{"token":"t","topic":"news","data":{"a":"b"}}}"#),
                ("reserved key from", Self.message(data: #"{"from":"x"}"#)),
                ("reserved key message_type", Self.message(data: #"{"message_type":"x"}"#)),
                ("reserved prefix google.", Self.message(data: #"{"google.c":"x"}"#)),
                ("reserved prefix gcm.", Self.message(data: #"{"gcm.n.e":"1"}"#)),
                ("number in data", Self.message(data: #"{"count":1}"#)),
                ("object in data", Self.message(data: #"{"nested":{"a":"b"}}"#)),
                ("ttl without unit", Self.message(android: #"{"ttl":"10"}"#)),
                ("negative ttl", Self.message(android: #"{"ttl":"-1s"}"#)),
                ("ttl over 28 days", Self.message(android: #"{"ttl":"2419201s"}"#)),
                ("ttl as number", Self.message(android: #"{"ttl":10}"#)),
                ("priority urgent", Self.message(android: #"{"priority":"urgent"}"#)),
                ("data over 4096 bytes", Self.message(data: #"{"big":"\#(big)"}"#)),
                ("not JSON", "{message"),
            ]
            for (name, body) in cases {
                let response = try await Self.send(client, accessToken: accessToken, body: body)
                #expect(response.status == 400, "\(name)")
                #expect(response.fcmErrorCode == "INVALID_ARGUMENT", "\(name)")
            }
            for ttl in ["0s", "3600s", "3.5s", "2419200s", "0.000000001s"] {
                let response = try await Self.send(client, accessToken: accessToken, body: Self.message(android: #"{"ttl":"\#(ttl)","priority":"normal"}"#))
                #expect(response.status == 200, "ttl \(ttl)")
            }
            let topic = try await Self.send(client, accessToken: accessToken, body: #"{"message":{"topic":"news","data":{"_mId":"t-1"}}}"#)
            #expect(topic.status == 200)
            #expect(simulator.state.notifications(mId: "t-1").first?.target == "topic:news")
            await client.close()
        }
    }

    @Test("a per-project quota per minute answers 429 QUOTA_EXCEEDED with Retry-After")
    func quotaPerMinute() async throws {
        let other = try Fixtures.ServiceAccount.make(project: "other-project")
        try await Fixtures.startFCM(accounts: [Self.account, other]).run { simulator in
            let client = try await simulator.client()
            let set = try await client.send("POST", "/_control/faults", json: #"{"quotaPerMinute": 3}"#)
            #expect(set.status == 200)
            let accessToken = try await Self.accessToken(client)
            var statuses: [Int] = []
            var retryAfter: Int?
            for _ in 0..<5 {
                let response = try await Self.send(client, accessToken: accessToken, body: Self.message())
                statuses.append(response.status)
                if response.status == 429 {
                    #expect(response.fcmErrorCode == "QUOTA_EXCEEDED")
                    #expect(Self.quotaViolations(response) == [["subject": "project:\(Self.project)", "description": "Message rate exceeded."]])
                    retryAfter = response.headers.first(name: "retry-after").flatMap(Int.init)
                }
            }
            // The minute window can roll over between two requests; at least the fourth request
            // of the same minute is refused.
            #expect(statuses.filter { $0 == 429 }.count >= 1)
            #expect(statuses.prefix(3).allSatisfy { $0 == 200 } || statuses.contains(429))
            let seconds = try #require(retryAfter)
            #expect((1...60).contains(seconds))

            let otherToken = try await Self.accessToken(client, account: other)
            let otherProject = try await Self.send(client, accessToken: otherToken, project: "other-project", body: Self.message())
            #expect(otherProject.status == 200)
            await client.close()
        }
    }

    /// The violations of the answer's `google.rpc.QuotaFailure` detail.
    static func quotaViolations(_ response: TestResponse) -> [[String: String]] {
        let details = (response.json?["error"] as? [String: Any])?["details"] as? [[String: Any]] ?? []
        let quotaFailure = details.first { $0["@type"] as? String == "type.googleapis.com/google.rpc.QuotaFailure" }
        return quotaFailure?["violations"] as? [[String: String]] ?? []
    }

    @Test("deviceQuota answers a chosen token's next sends with a device QUOTA_EXCEEDED (QuotaFailure, no Retry-After), other tokens go through")
    func deviceQuota() async throws {
        try await Fixtures.startFCM(accounts: [Self.account]).run { simulator in
            let client = try await simulator.client()
            let set = try await client.send("POST", "/_control/faults", json: #"{"deviceQuota": {"busy-device": 2}}"#)
            #expect(set.status == 200)
            let accessToken = try await Self.accessToken(client)
            for _ in 0..<2 {
                let refused = try await Self.send(client, accessToken: accessToken, body: Self.message(token: "busy-device"))
                #expect(refused.status == 429 && refused.fcmErrorCode == "QUOTA_EXCEEDED")
                #expect(Self.quotaViolations(refused) == [["subject": "device", "description": "Device message rate exceeded."]])
                #expect(refused.headers.first(name: "retry-after") == nil)
                #expect(try await Self.send(client, accessToken: accessToken, body: Self.message(token: "calm-device")).status == 200)
            }
            #expect(try await Self.send(client, accessToken: accessToken, body: Self.message(token: "busy-device")).status == 200)
            #expect(simulator.state.notifications().count == 3)
            await client.close()
        }
    }

    @Test("injected failures and bursts use FCM's error shape")
    func injectedFailures() async throws {
        try await Fixtures.startFCM(accounts: [Self.account]).run { simulator in
            let client = try await simulator.client()
            let accessToken = try await Self.accessToken(client)
            _ = try await client.send("POST", "/_control/faults", json: #"{"failPercent": 100, "failStatus": 503}"#)
            let failed = try await Self.send(client, accessToken: accessToken, body: Self.message())
            #expect(failed.status == 503 && failed.fcmErrorCode == "UNAVAILABLE")
            _ = try await client.send("POST", "/_control/faults", json: #"{"failPercent": 0, "burst429": 1}"#)
            let burst = try await Self.send(client, accessToken: accessToken, body: Self.message())
            #expect(burst.status == 429 && burst.fcmErrorCode == "QUOTA_EXCEEDED")
            #expect(Self.quotaViolations(burst).first?["description"] == "Message rate exceeded.")
            #expect(try await Self.send(client, accessToken: accessToken, body: Self.message()).status == 200)
            await client.close()
        }
    }
}
