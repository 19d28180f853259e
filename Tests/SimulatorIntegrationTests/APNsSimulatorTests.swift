import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOSSL
import ProviderSimulatorCore
import Testing

@Suite("APNs simulator over HTTP/2 + TLS")
struct APNsSimulatorTests {
    let key = P256.Signing.PrivateKey()

    func start(maxConcurrentStreams: Int = 100) async throws -> SimulatorServer {
        // The key goes in as a .p8 file, the way `--key TEAM:KEYID:PATH` reads it.
        let path = try Fixtures.writeP8(self.key)
        defer { try? FileManager.default.removeItem(atPath: path) }  // read at once; no private key left in /tmp
        let signingKey = try APNsProviderTokenVerifier.SigningKey(argument: "\(Fixtures.teamID):\(Fixtures.keyID):\(path)")
        return try await Fixtures.startAPNs(keys: [signingKey], maxConcurrentStreams: maxConcurrentStreams)
    }

    @Test("a valid push through async-http-client (HTTP/2) is accepted and logged with its _mId")
    func validPushIsAcceptedAndLogged() async throws {
        try await self.start().run { simulator in
            var tls = TLSConfiguration.makeClientConfiguration()
            tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(simulator.caCertificatePEM!.utf8)))
            var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
            configuration.httpVersion = .automatic
            let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            let deviceToken = Fixtures.deviceToken()
            let providerToken = try Fixtures.providerToken(key: self.key)
            do {
                var request = HTTPClientRequest(url: "https://localhost:\(simulator.port)/3/device/\(deviceToken)")
                request.method = .POST
                for (name, value) in Fixtures.apnsHeaders(token: providerToken, extra: [("apns-collapse-id", "c1")]) {
                    request.headers.add(name: name, value: value)
                }
                request.body = .bytes(ByteBuffer(string: Fixtures.alertPayload(mId: "mid-42")))
                let response = try await client.execute(request, timeout: .seconds(10))
                #expect(response.status == .ok)
                #expect(response.version == .http2)
                let apnsID = try #require(response.headers.first(name: "apns-id"))
                #expect(apnsID == apnsID.lowercased() && UUID(uuidString: apnsID) != nil)
                let body = try await response.body.collect(upTo: 1024)
                #expect(body.readableBytes == 0)

                var logQuery = HTTPClientRequest(url: "https://localhost:\(simulator.port)/_control/log?mId=mid-42")
                logQuery.method = .GET
                let log = try await client.execute(logQuery, timeout: .seconds(10))
                let logBody = try await log.body.collect(upTo: 1 << 20)
                let json = try #require(try JSONSerialization.jsonObject(with: Data(logBody.readableBytesView)) as? [String: Any])
                let entries = try #require(json["entries"] as? [[String: Any]])
                #expect(entries.count == 1)
                #expect(entries.first?["token"] as? String == deviceToken)
                #expect(entries.first?["id"] as? String == apnsID)
                #expect(entries.first?["topic"] as? String == Fixtures.topic)
                #expect(entries.first?["pushType"] as? String == "alert")
                #expect(entries.first?["collapseId"] as? String == "c1")
            } catch {
                try await client.shutdown()
                throw error
            }
            try await client.shutdown()
            #expect(simulator.state.counters.accepted == 1)
        }
    }

    @Test("an apns-id sent by the client is echoed")
    func apnsIDIsEchoed() async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            let id = "0f3b9a4c-1d2e-4f5a-8b6c-7d8e9f0a1b2c"
            let response = try await client.send(
                "POST", "/3/device/\(Fixtures.deviceToken())",
                headers: Fixtures.apnsHeaders(token: try Fixtures.providerToken(key: self.key), extra: [("apns-id", id)]),
                json: Fixtures.alertPayload()
            )
            #expect(response.status == 200)
            #expect(response.headers.first(name: "apns-id") == id)
            await client.close()
        }
    }

    @Test("every header, token and payload rejection carries APNs's status and reason", arguments: apnsRejections)
    func rejections(_ rejection: APNsRejection) async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            var headers = Fixtures.apnsHeaders(token: try Fixtures.providerToken(key: self.key))
            if rejection.dropTopic { headers.removeAll { $0.0 == "apns-topic" } }
            for (name, value) in rejection.headers {
                headers.removeAll { $0.0 == name }
                headers.append((name, value))
            }
            headers += rejection.addHeaders
            let path = rejection.path ?? "/3/device/\(rejection.deviceToken ?? Fixtures.deviceToken())"
            let response = try await client.send(rejection.method, path, headers: headers, json: rejection.payload)
            #expect(response.status == rejection.status)
            #expect(response.reason == rejection.reason)
            #expect(response.json?["timestamp"] == nil)
            #expect(simulator.state.counters.byReason[rejection.reason] == 1)
            #expect(simulator.state.notifications().isEmpty)
            await client.close()
        }
    }

    @Test("a voip push up to 5120 bytes is accepted")
    func voipPayloadLimit() async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            let payload = #"{"aps":{"alert":"\#(String(repeating: "x", count: 5120 - 20))"}}"#
            #expect(payload.utf8.count == 5120)
            let response = try await client.send(
                "POST", "/3/device/\(Fixtures.deviceToken())",
                headers: Fixtures.apnsHeaders(
                    token: try Fixtures.providerToken(key: self.key),
                    topic: "com.example.app.voip",
                    extra: [("apns-push-type", "voip")]
                ).filter { $0 != ("apns-push-type", "alert") },
                json: payload
            )
            #expect(response.status == 200)
            await client.close()
        }
    }

    @Test("dead… tokens get 410 Unregistered with a millisecond timestamp")
    func unregisteredPrefix() async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let response = try await client.send(
                "POST", "/3/device/\(Fixtures.deviceToken(prefix: "dead"))",
                headers: Fixtures.apnsHeaders(token: try Fixtures.providerToken(key: self.key)),
                json: Fixtures.alertPayload()
            )
            #expect(response.status == 410)
            #expect(response.reason == "Unregistered")
            let timestamp = try #require((response.json?["timestamp"] as? NSNumber)?.int64Value)
            #expect(timestamp >= before && timestamp <= before + 60_000)
            await client.close()
        }
    }

    @Test("provider tokens: missing, bad signature, unknown key, expired, too many updates, unrelated key")
    func providerTokenRejections() async throws {
        let otherKey = P256.Signing.PrivateKey()
        let signingKeys = [
            try APNsProviderTokenVerifier.SigningKey(teamID: Fixtures.teamID, keyID: Fixtures.keyID, pem: self.key.publicKey.pemRepresentation),
            try APNsProviderTokenVerifier.SigningKey(teamID: Fixtures.teamID, keyID: "OTHERKEY01", pem: otherKey.pemRepresentation),
        ]
        try await Fixtures.startAPNs(keys: signingKeys).run { simulator in
            let client = try await simulator.client()
            func push(_ token: String?, on client: H2TestClient) async throws -> TestResponse {
                try await client.send(
                    "POST", "/3/device/\(Fixtures.deviceToken())",
                    headers: Fixtures.apnsHeaders(token: token), json: Fixtures.alertPayload()
                )
            }
            let missing = try await push(nil, on: client)
            #expect(missing.status == 403 && missing.reason == "MissingProviderToken")

            let forged = try Fixtures.providerToken(key: P256.Signing.PrivateKey())
            let badSignature = try await push(forged, on: client)
            #expect(badSignature.status == 403 && badSignature.reason == "InvalidProviderToken")

            let unknownKey = try Fixtures.providerToken(key: self.key, keyID: "NOSUCHKEY0")
            let unknown = try await push(unknownKey, on: client)
            #expect(unknown.status == 403 && unknown.reason == "InvalidProviderToken")

            let old = try Fixtures.providerToken(key: self.key, issuedAt: Date().addingTimeInterval(-7200))
            let expired = try await push(old, on: client)
            #expect(expired.status == 403 && expired.reason == "ExpiredProviderToken")

            // 50 minutes old: valid, and becomes the key's current token.
            let first = try Fixtures.providerToken(key: self.key, issuedAt: Date().addingTimeInterval(-3000))
            #expect(try await push(first, on: client).status == 200)
            // A new token 10 minutes later is refused...
            let tooSoon = try Fixtures.providerToken(key: self.key, issuedAt: Date().addingTimeInterval(-2400))
            let refused = try await push(tooSoon, on: client)
            #expect(refused.status == 429 && refused.reason == "TooManyProviderTokenUpdates")
            // ...one 50 minutes later is a proper refresh.
            let refreshed = try Fixtures.providerToken(key: self.key)
            #expect(try await push(refreshed, on: client).status == 200)
            #expect(try await push(refreshed, on: client).status == 200)
            // The previous token stays valid until it is an hour old (requests still carrying it
            // while the sender switches); the refused one never becomes valid.
            #expect(try await push(first, on: client).status == 200)
            #expect(try await push(tooSoon, on: client).status == 429)

            // This connection is bound to KEY1234567: a token of another key is refused here...
            let otherToken = try Fixtures.providerToken(key: otherKey, keyID: "OTHERKEY01")
            let unrelated = try await push(otherToken, on: client)
            #expect(unrelated.status == 403 && unrelated.reason == "UnrelatedKeyIdInToken")
            // ...but fine on a new connection.
            let second = try await simulator.client()
            #expect(try await push(otherToken, on: second).status == 200)
            await client.close()
            await second.close()
        }
    }

    @Test("iat as a JSON number or as a numeric string (APNSwift's form) is accepted; any other iat is InvalidProviderToken")
    func issuedAtForms() async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            func push(iatJSON: String) async throws -> TestResponse {
                try await client.send(
                    "POST", "/3/device/\(Fixtures.deviceToken())",
                    headers: Fixtures.apnsHeaders(token: try Fixtures.providerToken(key: self.key, iatJSON: iatJSON)),
                    json: Fixtures.alertPayload()
                )
            }
            for garbage in [#""soon""#, #""1700000000abc""#, #""""#, #"" 1700000000""#, #""-1700000000""#, "null", #"{"t":1}"#] {
                let refused = try await push(iatJSON: garbage)
                #expect(refused.status == 403 && refused.reason == "InvalidProviderToken", "iat \(garbage)")
            }
            let now = Int(Date().timeIntervalSince1970)
            // The string form is read as the time it says: two hours old is expired...
            let old = try await push(iatJSON: "\"\(now - 7200)\"")
            #expect(old.status == 403 && old.reason == "ExpiredProviderToken")
            // ...50 minutes old is accepted, and so is a number 50 minutes later (a proper refresh).
            let asString = try await push(iatJSON: "\"\(now - 3000)\"")
            #expect(asString.status == 200, "iat as a string: \(asString.status) \(asString.reason ?? "")")
            let asNumber = try await push(iatJSON: "\(now)")
            #expect(asNumber.status == 200, "iat as a number: \(asNumber.status) \(asNumber.reason ?? "")")
            #expect(simulator.state.notifications().count == 2)
            await client.close()
        }
    }

    @Test("one stream until a request with a valid token succeeds, then a SETTINGS frame raises the limit")
    func streamLimitRaisedAfterFirstSuccess() async throws {
        try await self.start(maxConcurrentStreams: 50).run { simulator in
            _ = simulator.state.updateFaults { $0.latencyMs = 150 }
            let client = try await simulator.client()
            let providerToken = try Fixtures.providerToken(key: self.key)
            #expect(await client.events.wait { $0.maxConcurrentStreamsAdvertised == [1] })

            // Three concurrent requests that fail (bad device token): still one stream at a time.
            let startFailing = ContinuousClock.now
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await client.send(
                            "POST", "/3/device/\(Fixtures.deviceToken(prefix: "bad0"))",
                            headers: Fixtures.apnsHeaders(token: providerToken), json: Fixtures.alertPayload()
                        ).status
                    }
                }
                for try await status in group { #expect(status == 400) }
            }
            let serialised = ContinuousClock.now - startFailing
            #expect(simulator.state.counters.peakConcurrentStreams == 1)
            #expect(serialised >= .milliseconds(440))
            #expect(simulator.state.counters.settingsUpdates == 0)

            // The first success raises the limit.
            let first = try await client.send(
                "POST", "/3/device/\(Fixtures.deviceToken())",
                headers: Fixtures.apnsHeaders(token: providerToken), json: Fixtures.alertPayload()
            )
            #expect(first.status == 200)
            #expect(await client.events.wait { $0.maxConcurrentStreamsAdvertised == [1, 50] })

            let startConcurrent = ContinuousClock.now
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        try await client.send(
                            "POST", "/3/device/\(Fixtures.deviceToken())",
                            headers: Fixtures.apnsHeaders(token: providerToken), json: Fixtures.alertPayload()
                        ).status
                    }
                }
                for try await status in group { #expect(status == 200) }
            }
            let concurrent = ContinuousClock.now - startConcurrent
            #expect(simulator.state.counters.peakConcurrentStreams >= 3)
            #expect(concurrent < serialised)
            #expect(simulator.state.counters.settingsUpdates == 1)
            await client.close()
        }
    }

    @Test("GOAWAY from the control API reaches the client, and the connection closes")
    func goAwayFromControlAPI() async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            let accepted = try await client.send(
                "POST", "/3/device/\(Fixtures.deviceToken())",
                headers: Fixtures.apnsHeaders(token: try Fixtures.providerToken(key: self.key)), json: Fixtures.alertPayload()
            )
            #expect(accepted.status == 200)

            let control = try await simulator.client()
            let answer = try await control.send("POST", "/_control/goaway")
            #expect(answer.status == 200)
            #expect((answer.json?["connections"] as? NSNumber)?.intValue == 2)

            #expect(await client.events.wait { $0.goAwayReceived })
            #expect(client.events.goAwayDebugData == #"{"reason":"Shutdown"}"#)
            #expect(await client.events.wait { $0.closed })
            #expect(simulator.state.counters.goAways == 2)
            await control.close()
        }
    }

    @Test("GOAWAY after N streams, set by the control API")
    func goAwayAfterStreams() async throws {
        try await self.start().run { simulator in
            let control = try await simulator.client()
            let set = try await control.send("POST", "/_control/faults", json: #"{"goAwayAfterStreams": 2}"#)
            #expect(set.status == 200)
            await control.close()

            let client = try await simulator.client()
            let token = try Fixtures.providerToken(key: self.key)
            for _ in 0..<2 {
                let response = try await client.send(
                    "POST", "/3/device/\(Fixtures.deviceToken())", headers: Fixtures.apnsHeaders(token: token), json: Fixtures.alertPayload()
                )
                #expect(response.status == 200)
            }
            #expect(await client.events.wait { $0.goAwayReceived })
            #expect(await client.events.wait { $0.closed })
        }
    }

    @Test("control API: injected failures, 429 bursts, latency, counters and reset")
    func controlFaults() async throws {
        try await self.start().run { simulator in
            let client = try await simulator.client()
            let token = try Fixtures.providerToken(key: self.key)
            func push() async throws -> TestResponse {
                try await client.send(
                    "POST", "/3/device/\(Fixtures.deviceToken())", headers: Fixtures.apnsHeaders(token: token), json: Fixtures.alertPayload()
                )
            }
            #expect(try await push().status == 200)

            let faults = try await client.send(
                "POST", "/_control/faults", json: #"{"failPercent": 100, "failStatus": 503, "failReason": "ServiceUnavailable"}"#
            )
            #expect(faults.status == 200)
            let failed = try await push()
            #expect(failed.status == 503 && failed.reason == "ServiceUnavailable")

            _ = try await client.send("POST", "/_control/faults", json: #"{"failPercent": 0, "burst429": 2, "latencyMs": 100}"#)
            #expect(try await push().reason == "TooManyRequests")
            #expect(try await push().reason == "TooManyRequests")
            let start = ContinuousClock.now
            #expect(try await push().status == 200)
            #expect(ContinuousClock.now - start >= .milliseconds(95))

            let unknownKey = try await client.send("POST", "/_control/faults", json: #"{"nope": 1}"#)
            #expect(unknownKey.status == 400)

            let counters = try await client.send("GET", "/_control/counters")
            let byReason = counters.json?["byReason"] as? [String: Any]
            #expect((byReason?["TooManyRequests"] as? NSNumber)?.intValue == 2)
            #expect((byReason?["ServiceUnavailable"] as? NSNumber)?.intValue == 1)
            #expect((counters.json?["accepted"] as? NSNumber)?.intValue == 2)

            let health = try await client.send("GET", "/health")
            #expect(health.status == 200 && health.json?["status"] as? String == "ok")

            #expect(try await client.send("POST", "/_control/reset").status == 200)
            #expect(simulator.state.counters.accepted == 0)
            #expect(simulator.state.faults == FaultPlan())
            #expect(simulator.state.notifications().isEmpty)
            await client.close()
        }
    }
}

/// One request that APNs refuses, and how.
struct APNsRejection: Sendable, CustomTestStringConvertible {
    var name: String
    var method = "POST"
    var path: String? = nil
    var deviceToken: String? = nil
    /// Replace the default header of the same name.
    var headers: [(String, String)] = []
    /// Added beside the defaults (duplicates).
    var addHeaders: [(String, String)] = []
    var dropTopic = false
    var payload: String = Fixtures.alertPayload()
    var status: Int
    var reason: String
    var testDescription: String { self.name }
}

let apnsRejections: [APNsRejection] = [
    APNsRejection(name: "GET", method: "GET", status: 405, reason: "MethodNotAllowed"),
    APNsRejection(name: "unknown path", path: "/3/devices/abc", status: 404, reason: "BadPath"),
    APNsRejection(name: "duplicate apns-topic", addHeaders: [("apns-topic", Fixtures.topic)], status: 400, reason: "DuplicateHeaders"),
    APNsRejection(name: "non-hex token", deviceToken: "not-a-token", status: 400, reason: "BadDeviceToken"),
    APNsRejection(name: "short token", deviceToken: "abcd", status: 400, reason: "BadDeviceToken"),
    APNsRejection(name: "missing topic", dropTopic: true, status: 400, reason: "MissingTopic"),
    APNsRejection(name: "other app's topic", headers: [("apns-topic", "com.other.app")], status: 400, reason: "TopicDisallowed"),
    APNsRejection(name: "voip without .voip topic", headers: [("apns-push-type", "voip")], status: 400, reason: "BadTopic"),
    APNsRejection(name: "unknown push type", headers: [("apns-push-type", "banana")], status: 400, reason: "InvalidPushType"),
    APNsRejection(
        name: "background push with an alert", headers: [("apns-push-type", "background"), ("apns-priority", "5")],
        status: 400, reason: "InvalidPushType"
    ),
    APNsRejection(name: "priority 7", headers: [("apns-priority", "7")], status: 400, reason: "BadPriority"),
    APNsRejection(
        name: "priority 10 on content-available only", headers: [("apns-push-type", "background"), ("apns-priority", "10")],
        payload: #"{"aps":{"content-available":1}}"#, status: 400, reason: "BadPriority"
    ),
    APNsRejection(name: "expiration not a number", headers: [("apns-expiration", "tomorrow")], status: 400, reason: "BadExpirationDate"),
    APNsRejection(name: "collapse id of 65 bytes", headers: [("apns-collapse-id", String(repeating: "c", count: 65))], status: 400, reason: "BadCollapseId"),
    APNsRejection(name: "uppercase apns-id", headers: [("apns-id", "0F3B9A4C-1D2E-4F5A-8B6C-7D8E9F0A1B2C")], status: 400, reason: "BadMessageId"),
    APNsRejection(name: "empty payload", payload: "", status: 400, reason: "PayloadEmpty"),
    APNsRejection(
        name: "payload of 4097 bytes",
        payload: #"{"aps":{"alert":"\#(String(repeating: "x", count: 4097 - 20))"}}"#, status: 413, reason: "PayloadTooLarge"
    ),
    APNsRejection(
        name: "voip payload of 5121 bytes", headers: [("apns-push-type", "voip"), ("apns-topic", "com.example.app.voip")],
        payload: #"{"aps":{"alert":"\#(String(repeating: "x", count: 5121 - 20))"}}"#, status: 413, reason: "PayloadTooLarge"
    ),
    APNsRejection(name: "payload without aps", payload: #"{"hello":"world"}"#, status: 400, reason: "BadPayload"),
    APNsRejection(name: "payload not JSON", payload: "hello", status: 400, reason: "BadPayload"),
    APNsRejection(name: "prefix bad0", deviceToken: Fixtures.deviceToken(prefix: "bad0"), status: 400, reason: "BadDeviceToken"),
    APNsRejection(name: "prefix busy", deviceToken: Fixtures.deviceToken(prefix: "busy"), status: 429, reason: "TooManyRequests"),
    APNsRejection(name: "prefix e429", deviceToken: Fixtures.deviceToken(prefix: "e429"), status: 429, reason: "TooManyRequests"),
    APNsRejection(name: "prefix e500", deviceToken: Fixtures.deviceToken(prefix: "e500"), status: 500, reason: "InternalServerError"),
    APNsRejection(name: "prefix e503", deviceToken: Fixtures.deviceToken(prefix: "e503"), status: 503, reason: "ServiceUnavailable"),
]
