import APNS
import Foundation
import MetricsTestKit
import NIOCore
import ProviderSimulatorCore
import Testing

/// Everything that talks to an in-process simulator over real TLS and HTTP/2. Serialized: the
/// load tests measure connections and should not share two cores with the others.
@Suite("APNSClient against the APNs simulator", .serialized)
struct APNSClientIntegrationTests {}

extension APNSClientIntegrationTests {
    @Suite("sending")
    struct Sending {
        let key = TestKey()

        @Test("an accepted push: 200, apns-id echoed lowercase, headers logged by the simulator")
        func accepted() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let request = Harness.request(pushType: "alert", priority: 5, collapseId: "c-42", mId: "mid-accepted")
                    let response = try await client.send(request, credentials: try self.key.credentials(), environment: .production)
                    #expect(response.status == 200)
                    #expect(response.apnsId == request.apnsId.uuidString.lowercased())
                    #expect(response.outcome == .sent(apnsId: request.apnsId.uuidString.lowercased()))

                    let logged = server.state.notifications(token: request.deviceToken)
                    let entry = try #require(logged.first)
                    #expect(logged.count == 1)
                    #expect(entry.id == request.apnsId.uuidString.lowercased())
                    #expect(entry.mId == "mid-accepted")
                    #expect(entry.topic == Harness.topic)
                    #expect(entry.pushType == "alert")
                    #expect(entry.priority == "5")
                    #expect(entry.collapseId == "c-42")
                }
            }
        }

        @Test("headers reach APNs: the simulator's validation answers are classified")
        func headersAreValidated() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try self.key.credentials()
                    func outcome(_ request: APNSRequest) async throws -> APNSOutcome {
                        try await client.send(request, credentials: credentials, environment: .sandbox).outcome
                    }
                    let longCollapseId = String(repeating: "c", count: 65)
                    #expect(try await outcome(Harness.request(collapseId: longCollapseId)) == .rejected(reason: .badCollapseId))
                    #expect(try await outcome(Harness.request(collapseId: String(repeating: "c", count: 64))).isSent)
                    #expect(try await outcome(Harness.request(priority: 7)) == .rejected(reason: .badPriority))
                    #expect(try await outcome(Harness.request(pushType: "telepathy")) == .rejected(reason: .invalidPushType))
                    #expect(try await outcome(Harness.request(topic: "com.example.other")) == .rejected(reason: .topicDisallowed))
                    #expect(try await outcome(Harness.request(pushType: "voip")) == .rejected(reason: .badTopic))
                    var tooLarge = Harness.request()
                    tooLarge.payload = ByteBuffer(
                        bytes: Array(#"{"aps":{"alert":"x"},"pad":""#.utf8) + Array(repeating: UInt8(ascii: "a"), count: 4100) + Array(#""}"#.utf8))
                    #expect(try await outcome(tooLarge) == .rejected(reason: .payloadTooLarge))
                    var expired = Harness.request()
                    expired.expiration = Date(timeIntervalSince1970: 0)
                    #expect(try await outcome(expired).isSent)
                }
            }
        }

        @Test("a line break or NUL in a header value or the path: failed before sending, not retriable, nothing reaches APNs")
        func malformedRequestIsNotSent() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try self.key.credentials()
                    var badToken = Harness.request()
                    badToken.deviceToken += "\r\nx"
                    var nul = Harness.request()
                    nul.topic += "\u{0}"
                    for (request, named) in [
                        (Harness.request(collapseId: "c\r\napns-priority: 5"), "apns-collapse-id"), (nul, "apns-topic"), (badToken, "the path"),
                    ] {
                        let error = await #expect(throws: APNSClientError.self) {
                            try await client.send(request, credentials: credentials, environment: .production)
                        }
                        #expect(error?.code == .invalidRequest)
                        #expect(error?.isRetriable == false)
                        #expect(error?.mayHaveBeenDelivered == false)
                        #expect(error?.detail.contains(named) == true, "\(error?.detail ?? "")")
                    }
                    // The connection is not harmed: a good request still goes, and it is the only one logged.
                    let good = Harness.request(mId: "mid-after-malformed")
                    #expect(try await client.send(good, credentials: credentials, environment: .production).status == 200)
                    #expect(server.state.notifications().map(\.mId) == ["mid-after-malformed"])
                    #expect(server.state.counters.streams == 1)
                }
            }
        }

        @Test("a request whose stillWanted says no when its turn comes is withdrawn: never written, nothing reaches APNs")
        func withdrawnRequestIsNotSent() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try self.key.credentials()
                    var unwanted = Harness.request(mId: "mid-withdrawn")
                    unwanted.stillWanted = { false }
                    let error = await #expect(throws: APNSClientError.self) {
                        try await client.send(unwanted, credentials: credentials, environment: .production)
                    }
                    #expect(error?.code == .withdrawn)
                    #expect(error?.mayHaveBeenDelivered == false)
                    var wanted = Harness.request(mId: "mid-wanted")
                    wanted.stillWanted = { true }
                    #expect(try await client.send(wanted, credentials: credentials, environment: .production).status == 200)
                    #expect(server.state.notifications().map(\.mId) == ["mid-wanted"], "only the wanted request reached APNs")
                }
            }
        }

        @Test("no answer by the request deadline: timeout (may have been delivered) soon after it, and the connection goes on")
        func requestDeadline() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                var configuration = Harness.configuration(for: server, connections: 1)
                configuration.requestTimeout = .milliseconds(400)
                try await Harness.withClient(configuration) { client in
                    let credentials = try self.key.credentials()
                    #expect(try await client.send(Harness.request(mId: "warm-up"), credentials: credentials, environment: .production).status == 200)
                    _ = server.state.updateFaults { $0.latencyMs = 3000 }
                    let started = ContinuousClock.now
                    let error = await #expect(throws: APNSClientError.self) {
                        try await client.send(Harness.request(mId: "slow"), credentials: credentials, environment: .production)
                    }
                    let waited = ContinuousClock.now - started
                    #expect(error?.code == .timeout)
                    #expect(error?.isRetriable == true)
                    #expect(error?.mayHaveBeenDelivered == true)
                    // The deadline is checked ten times a second: failed within its deadline + 100 ms (and scheduling slack).
                    #expect(waited >= .milliseconds(400) && waited < .milliseconds(1200), "\(waited)")
                    _ = server.state.updateFaults { $0.latencyMs = 0 }
                    #expect(try await client.send(Harness.request(mId: "after"), credentials: credentials, environment: .production).status == 200)
                    #expect(server.state.counters.connections == 1)
                }
            }
        }

        @Test("simulator token prefixes: dead tokens with their timestamp, bad tokens, 429 and 5xx to retry")
        func tokenPrefixes() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try self.key.credentials()
                    func send(prefix: String) async throws -> APNSResponse {
                        try await client.send(Harness.request(token: Harness.deviceToken(prefix: prefix)), credentials: credentials, environment: .production)
                    }
                    let before = Date()
                    let dead = try await send(prefix: "dead")
                    #expect(dead.status == 410)
                    let since = try #require(dead.timestamp)
                    #expect(abs(since.timeIntervalSince(before)) < 60)
                    #expect(dead.outcome == .tokenInvalid(reason: .unregistered, invalidSince: since))
                    #expect(try await send(prefix: "bad0").outcome == .tokenInvalid(reason: .badDeviceToken, invalidSince: nil))
                    #expect(try await send(prefix: "busy").outcome == .retry(reason: .tooManyRequests, after: nil))
                    #expect(try await send(prefix: "e429").outcome == .retry(reason: .tooManyRequests, after: nil))
                    #expect(try await send(prefix: "e500").outcome == .retry(reason: .internalServerError, after: nil))
                    #expect(try await send(prefix: "e503").outcome == .retry(reason: .serviceUnavailable, after: nil))
                    #expect(server.state.counters.byReason["TooManyProviderTokenUpdates"] == nil)
                }
            }
        }

        @Test("bad credentials fail clearly without showing the key")
        func badCredentials() throws {
            let pem = "-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n"
            do {
                _ = try APNSCredentials.token(id: "sha256:x", teamId: "TEAM", keyId: "KEY", privateKeyPEM: pem)
                Issue.record("a broken .p8 was accepted")
            } catch {
                #expect(error.code == .badCredentials)
                #expect(!error.isRetriable)
                #expect(!error.description.contains("not a key"))
            }
            let good = try self.key.credentials(id: "sha256:abc")
            #expect(good.id == "sha256:abc")
            #expect(!good.description.contains("PRIVATE"))
            #expect(!"\(good)".contains(self.key.key.pemRepresentation))
        }
    }
}

extension APNSOutcome {
    var isSent: Bool {
        if case .sent = self { return true }
        return false
    }
}
