import FCM
import Foundation
import NIOPosix
import PushTestSupport
import Synchronization
import Testing
import _CryptoExtras

@Suite("FCMClient against the in-process fcm-simulator over HTTP/2 + TLS", .serialized)
struct FCMClientSimulatorTests {
    typealias Fixture = SimulatorFixture
    static let projectA = Fixture.projectA.project
    static let projectB = Fixture.projectB.project

    @Test("a data message and a notification message are accepted with a name; the simulator logs token and _mId")
    func accepted() async throws {
        try await Fixture.run { simulator in
            let account = try Fixture.projectA.serviceAccount()
            try await simulator.withClient { client in
                let data = try await client.send(Fixture.dataMessage(token: "device-1", mId: "m-data").request(project: Self.projectA), account: account)
                #expect(data.status == 200)
                let name = try #require(data.name)
                #expect(name.hasPrefix("projects/\(Self.projectA)/messages/"))
                #expect(data.outcome == .sent(name: name))

                let notification = FCMRequestBody(
                    #"{"token":"device-2","notification":{"title":"Hello","body":"World"},"data":{"_mId":"m-note"},"android":{"priority":"high","ttl":"3600s","notification":{"channel_id":"news"}}}"#
                )
                let note = try await client.send(notification.request(project: Self.projectA), account: account)
                #expect(note.status == 200)
                #expect(note.outcome == .sent(name: try #require(note.name)))

                let loggedData = simulator.state.notifications(mId: "m-data")
                #expect(loggedData.count == 1)
                #expect(loggedData.first?.token == "device-1")
                #expect(loggedData.first?.id == name)
                let loggedNote = simulator.state.notifications(mId: "m-note")
                #expect(loggedNote.first?.token == "device-2")
                #expect(loggedNote.first?.priority == "high")
            }
        }
    }

    @Test("token prefixes give the documented outcomes; a device's QUOTA_EXCEEDED pauses nothing, a project's at least 60 s")
    func errorOutcomes() async throws {
        try await Fixture.run { simulator in
            let account = try Fixture.projectA.serviceAccount()
            try await simulator.withClient { client in
                let cases: [(String, FCMOutcome)] = [
                    ("unreg-1", .tokenInvalid(reason: "UNREGISTERED")),
                    ("mismatch-1", .tokenInvalid(reason: "SENDER_ID_MISMATCH")),
                    ("invalid-1", .tokenInvalid(reason: "INVALID_ARGUMENT")),
                    ("unavail-1", .retry(reason: "UNAVAILABLE", after: .seconds(10))),
                    ("internal-1", .retry(reason: "INTERNAL", after: nil)),
                    ("thirdparty-1", .credentialRejected(reason: "THIRD_PARTY_AUTH_ERROR")),
                ]
                for (token, expected) in cases {
                    let response = try await client.send(Fixture.dataMessage(token: token, mId: token).request(project: Self.projectA), account: account)
                    #expect(response.outcome == expected, "\(token): \(response)")
                }
                // A payload error is INVALID_ARGUMENT too, but it does not name the token.
                let reserved = FCMRequestBody(#"{"token":"device-1","data":{"from":"x"}}"#)
                let payload = try await client.send(reserved.request(project: Self.projectA), account: account)
                #expect(payload.errorCode == .invalidArgument)
                #expect(payload.outcome == .rejected(reason: "INVALID_ARGUMENT"))
                let tooBig = FCMRequestBody(#"{"token":"device-1","data":{"big":"\#(String(repeating: "x", count: 4100))"}}"#)
                #expect(try await client.send(tooBig.request(project: Self.projectA), account: account).outcome == .rejected(reason: "INVALID_ARGUMENT"))

                // A device's quota (the `quota…` prefix, or `deviceQuota` for a chosen token) pauses
                // nothing: the project stays open.
                let device = try await client.send(Fixture.dataMessage(token: "quota-1", mId: "q").request(project: Self.projectA), account: account)
                #expect(device.status == 429)
                #expect(device.errorCode == .quotaExceeded)
                #expect(device.quotaScope == .device)
                #expect(device.outcome == .deviceQuotaExceeded(after: nil))
                try await simulator.control(.POST, "/_control/faults", json: #"{"deviceQuota":{"device-2":1}}"#)
                let chosen = try await client.send(Fixture.dataMessage(token: "device-2", mId: "d2").request(project: Self.projectA), account: account)
                #expect(chosen.outcome == .deviceQuotaExceeded(after: nil))
                let again = try await client.send(Fixture.dataMessage(token: "device-2", mId: "d2").request(project: Self.projectA), account: account)
                #expect(again.status == 200, "the device's quota answers only the sends it was armed for")
                #expect(client.throttle.status(project: Self.projectA) == .open)

                // Last, because it pauses project A: the project's quota.
                try await simulator.control(.POST, "/_control/faults", json: #"{"burst429":1}"#)
                let quota = try await client.send(Fixture.dataMessage(token: "device-1", mId: "q").request(project: Self.projectA), account: account)
                #expect(quota.status == 429)
                #expect(quota.retryAfter == .seconds(60))
                #expect(quota.quotaScope == .project)
                guard case .quotaExceeded(let after) = quota.outcome else {
                    Issue.record("expected quotaExceeded, got \(quota.outcome)")
                    return
                }
                #expect(after >= .seconds(60))
                guard case .paused = client.throttle.status(project: Self.projectA) else {
                    Issue.record("project A is not paused")
                    return
                }
                #expect(client.throttle.status(project: Self.projectB) == .open)
            }

            // A quota window's shorter Retry-After (seconds to the end of the minute) still gives 60 s.
            try await simulator.control(.POST, "/_control/faults", json: #"{"quotaPerMinute":0}"#)
            try await simulator.withClient { client in
                let refused = try await client.send(Fixture.dataMessage(token: "device-1", mId: "q2").request(project: Self.projectA), account: account)
                #expect(refused.errorCode == .quotaExceeded)
                #expect(refused.outcome == .quotaExceeded(after: .seconds(60)))
            }
        }
    }

    @Test("1,000 concurrent sends make exactly one token request", arguments: SendAPI.allCases)
    func oneTokenRequest(api: SendAPI) async throws {
        try await Fixture.run { simulator in
            let account = try Fixture.projectA.serviceAccount()
            try await simulator.withClient { client in
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<1000 {
                        group.addTask {
                            try await client.send(
                                Fixture.dataMessage(token: "device-\(index)", mId: "c-\(index)").request(project: Self.projectA), account: account, via: api
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                }
                #expect(statuses == [200: 1000])
                #expect(simulator.grantedTokenRequests == 1)
                #expect(simulator.state.counters.byReason.keys.filter { $0.hasPrefix("oauth:") }.isEmpty)
            }
        }
    }

    @Test("a token is refreshed exactly once when expires_in - margin has passed")
    func refreshBeforeExpiry() async throws {
        // The simulator's tokens live 4 s; with a 1 s margin the client refreshes after 3 s.
        try await Fixture.run(tokenLifetime: 4) { simulator in
            let account = try Fixture.projectA.serviceAccount()
            try await simulator.withClient(simulator.configuration(tokenRefreshMargin: .seconds(1))) { client in
                #expect(try await client.send(Fixture.dataMessage(token: "d", mId: "r-0").request(project: Self.projectA), account: account).status == 200)
                #expect(simulator.grantedTokenRequests == 1)
                try await Task.sleep(for: .milliseconds(3200))
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            try await client.send(Fixture.dataMessage(token: "d", mId: "r-\(index + 1)").request(project: Self.projectA), account: account)
                                .status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == 200 })
                #expect(simulator.grantedTokenRequests == 2)
                #expect(simulator.state.counters.byStatus["401"] == nil)
            }
        }
    }

    @Test("a 401 (token expired at the simulator, unknown to the client's clock) refreshes once and the resend succeeds", arguments: SendAPI.allCases)
    func unauthorizedRefreshes(api: SendAPI) async throws {
        try await Fixture.run(tokenLifetime: 2) { simulator in
            let account = try Fixture.projectA.serviceAccount()
            // A frozen clock: the client believes its token valid; the simulator expires it.
            let clock = ManualClock()
            try await simulator.withClient(now: clock.now) { client in
                #expect(
                    try await client.send(Fixture.dataMessage(token: "d", mId: "u-0").request(project: Self.projectA), account: account, via: api).status == 200
                )
                try await Task.sleep(for: .milliseconds(2300))
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for index in 0..<50 {
                        group.addTask {
                            try await client.send(
                                Fixture.dataMessage(token: "d", mId: "u-\(index + 1)").request(project: Self.projectA), account: account, via: api
                            ).status
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses.allSatisfy { $0 == 200 })
                #expect((simulator.state.counters.byStatus["401"] ?? 0) >= 1)
                #expect(simulator.grantedTokenRequests == 2)
            }
        }
    }

    @Test("a key the token endpoint does not know gives tokenEndpointFailed (invalid_grant) without the key; a broken key file names the field")
    func invalidServiceAccount() async throws {
        try await Fixture.run { simulator in
            let otherKey = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let json = Fixture.projectA.json(key: otherKey)
            let account = try FCMServiceAccount(id: "project-a-rotated", json: json)
            #expect(!"\(account)".contains("PRIVATE KEY"))
            try await simulator.withClient { client in
                do throws(FCMClientError) {
                    _ = try await client.send(Fixture.dataMessage(token: "d", mId: "k").request(project: Self.projectA), account: account)
                    Issue.record("the send should fail")
                } catch {
                    #expect(error.code == .tokenEndpointFailed)
                    #expect(error.description.contains("invalid_grant"))
                    #expect(!error.isRetriable)
                    #expect(!error.mayHaveBeenDelivered)
                    let pemBody = otherKey.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init) ?? "unused"
                    #expect(!error.description.contains(pemBody))
                    #expect(!error.description.contains("PRIVATE KEY"))
                }
            }
            #expect(simulator.state.counters.byReason["oauth:invalid_grant"] == 1)
        }

        for (field, json) in [
            ("private_key", Fixture.projectA.json(dropping: "private_key")),
            ("client_email", Fixture.projectA.json(dropping: "client_email")),
            ("project_id", Fixture.projectA.json(dropping: "project_id")),
            ("private_key", Fixture.projectA.json().replacingOccurrences(of: "MII", with: "XXX")),
            // The assertion is posted to token_uri: never in cleartext, never to another host.
            ("token_uri", Fixture.projectA.json(tokenURI: "http://oauth2.googleapis.com/token")),
            ("token_uri", Fixture.projectA.json(tokenURI: "https://evil.example/token")),
            ("token_uri", Fixture.projectA.json(tokenURI: "https://oauth2.googleapis.com.evil.example/token")),
            ("token_uri", Fixture.projectA.json(tokenURI: "https://googleapis.com/token")),
            ("token_uri", Fixture.projectA.json(tokenURI: "https://127.0.0.1:8443/token")),
            ("token_uri", Fixture.projectA.json(tokenURI: "https://oauth2.googleapis.com:8443/token")),
        ] {
            do {
                _ = try FCMServiceAccount(id: "broken", json: json)
                Issue.record("\(field): parsed")
            } catch let error as FCMClientError {
                #expect(error.code == .invalidServiceAccount)
                #expect(error.description.contains(field), "\(error)")
                #expect(!error.description.contains("PRIVATE KEY"))
            }
        }
        // Google's other token hosts of older key files are accepted.
        for uri in ["https://accounts.google.com/o/oauth2/token", "https://www.googleapis.com/oauth2/v4/token"] {
            #expect(try FCMServiceAccount(id: "older", json: Fixture.projectA.json(tokenURI: uri)).tokenURI == uri)
        }
    }

    @Test("after QUOTA_EXCEEDED on project A, sends to A wait while sends to project B go through at once")
    func projectThrottle() async throws {
        try await Fixture.run { simulator in
            let accountA = try Fixture.projectA.serviceAccount()
            let accountB = try Fixture.projectB.serviceAccount()
            let clock = ManualClock()
            try await simulator.withClient(now: clock.now) { client in
                // Warm both token caches before the clock moves.
                #expect(try await client.send(Fixture.dataMessage(token: "d", mId: "a-0").request(project: Self.projectA), account: accountA).status == 200)
                #expect(try await client.send(Fixture.dataMessage(token: "d", mId: "b-0").request(project: Self.projectB), account: accountB).status == 200)

                try await simulator.control(.POST, "/_control/faults", json: #"{"burst429":1}"#)
                let quota = try await client.send(Fixture.dataMessage(token: "d", mId: "a-q").request(project: Self.projectA), account: accountA)
                #expect(quota.outcome == .quotaExceeded(after: .seconds(60)))

                let doneA = Flag()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        let response = try await client.send(Fixture.dataMessage(token: "d", mId: "a-1").request(project: Self.projectA), account: accountA)
                        #expect(response.status == 200)
                        doneA.value.store(true, ordering: .relaxed)
                    }
                    let started = ContinuousClock.now
                    for index in 1...5 {
                        let response = try await client.send(
                            Fixture.dataMessage(token: "d", mId: "b-\(index)").request(project: Self.projectB), account: accountB)
                        #expect(response.status == 200)
                    }
                    #expect(ContinuousClock.now - started < .seconds(5))
                    try await Task.sleep(for: .milliseconds(300))
                    #expect(!doneA.isSet)
                    #expect(simulator.state.notifications(mId: "a-1").isEmpty)
                    clock.advance(by: 59)
                    try await Task.sleep(for: .milliseconds(200))
                    #expect(!doneA.isSet)
                    clock.advance(by: 2)
                    try await group.waitForAll()
                }
                #expect(doneA.isSet)
                #expect(simulator.state.notifications(mId: "a-1").count == 1)
                guard case .recovering = client.throttle.status(project: Self.projectA) else {
                    Issue.record("project A should be recovering, is \(client.throttle.status(project: Self.projectA))")
                    return
                }
            }
        }
    }

    @Test(
        "2,000 concurrent sends over 2 connections; a GOAWAY mid-stream: every send answered 200, each message accepted exactly once",
        arguments: SendAPI.allCases)
    func manySendsAndGoAway(api: SendAPI) async throws {
        // 100 streams per connection: most sends queue in the client, so the GOAWAY finds both
        // requests in flight (answered) and requests not yet sent (moved to new connections).
        try await Fixture.run(maxConcurrentStreams: 100) { simulator in
            let account = try Fixture.projectA.serviceAccount()
            try await simulator.withClient { client in
                func sendAll(_ count: Int, prefix: String, during: (@Sendable () async throws -> Void)? = nil) async throws -> (
                    ok: Int, errors: [FCMClientError]
                ) {
                    try await withThrowingTaskGroup(of: Result<Int, FCMClientError>?.self) { group in
                        for index in 0..<count {
                            group.addTask {
                                do throws(FCMClientError) {
                                    let response = try await client.send(
                                        Fixture.dataMessage(token: "device-\(index)", mId: "\(prefix)-\(index)").request(project: Self.projectA),
                                        account: account, via: api
                                    )
                                    return .success(response.status)
                                } catch {
                                    return .failure(error)
                                }
                            }
                        }
                        if let during {
                            group.addTask {
                                try await during()
                                return nil
                            }
                        }
                        var ok = 0
                        var errors: [FCMClientError] = []
                        for try await result in group {
                            switch result {
                            case .success(200)?: ok += 1
                            case .success(let status)?: Issue.record("status \(status)")
                            case .failure(let error)?: errors.append(error)
                            case nil: break
                            }
                        }
                        return (ok, errors)
                    }
                }

                let first = try await sendAll(2000, prefix: "bulk")
                #expect(first.ok == 2000)
                #expect(first.errors.isEmpty)
                #expect(client.openConnections == 2)
                #expect(simulator.state.counters.peakConcurrentStreams > 1)

                let logBefore = simulator.state.notifications(limit: Int.max).count
                let second = try await sendAll(2000, prefix: "goaway") {
                    // Wait until the burst is under way, then tell every connection to go away.
                    while simulator.state.notifications(limit: Int.max).count < logBefore + 200 {
                        try await Task.sleep(for: .milliseconds(5))
                    }
                    let answer = try await simulator.control(.POST, "/_control/goaway")
                    #expect(((answer["connections"] as? NSNumber)?.intValue ?? 0) >= 2)
                }
                print(
                    "GOAWAY run: \(second.ok) ok, \(second.errors.count) retriable errors (first: \(second.errors.first?.description ?? "none")), connections \(simulator.state.counters.connections)"
                )
                // Streams the GOAWAY cut off were provably not processed and went again on new
                // connections; streams it let through were answered before the connection
                // closed. Nothing is lost, nothing arrives twice.
                #expect(second.ok == 2000)
                #expect(second.errors.isEmpty, "\(second.errors.prefix(3))")
                let goAwayMessages = simulator.state.notifications(limit: Int.max).dropFirst(logBefore)
                #expect(goAwayMessages.count == 2000)
                #expect(Set(goAwayMessages.map(\.mId)).count == 2000)
                #expect(simulator.state.counters.goAways >= 2)
                // New connections replaced the ones that went away, while the burst ran.
                #expect(simulator.state.counters.connections >= 4)

                let after = try await sendAll(200, prefix: "after")
                #expect(after.ok == 200)
                #expect(client.openConnections == 2)
            }
        }
    }

    @Test("a line break in the project id (the request path): invalidRequest before sending, not retriable; the connection keeps working")
    func malformedPathIsNotSent() async throws {
        try await Fixture.run { simulator in
            let account = try Fixture.projectA.serviceAccount()
            try await simulator.withClient { client in
                do throws(FCMClientError) {
                    _ = try await client.send(Fixture.dataMessage(token: "d", mId: "bad").request(project: "\(Self.projectA)\r\nx"), account: account)
                    Issue.record("the send should fail")
                } catch {
                    #expect(error.code == .invalidRequest, "\(error)")
                    #expect(!error.isRetriable)
                    #expect(!error.mayHaveBeenDelivered)
                }
                let good = try await client.send(Fixture.dataMessage(token: "d", mId: "good").request(project: Self.projectA), account: account)
                #expect(good.status == 200)
                #expect(simulator.state.notifications().map(\.mId) == ["good"])
            }
        }
    }

    @Test("connection refused: a retriable connectFailed, quickly, for the send and for the token endpoint")
    func connectionRefused() async throws {
        let closed = try Fixture.closedPort()
        try await Fixture.run { simulator in
            let account = try Fixture.projectA.serviceAccount()
            var sendRefused = simulator.configuration()
            sendRefused.baseURL = "https://127.0.0.1:\(closed)"
            var tokenRefused = simulator.configuration()
            tokenRefused.tokenURLOverride = "https://127.0.0.1:\(closed)/token"
            for configuration in [sendRefused, tokenRefused] {
                try await Fixture.withClient(configuration) { client in
                    let started = ContinuousClock.now
                    do throws(FCMClientError) {
                        _ = try await client.send(Fixture.dataMessage(token: "d", mId: "x").request(project: Self.projectA), account: account)
                        Issue.record("the send should fail")
                    } catch {
                        #expect(error.code == .connectFailed, "\(error)")
                        #expect(error.isRetriable)
                        #expect(!error.mayHaveBeenDelivered)
                    }
                    #expect(ContinuousClock.now - started < .seconds(2))
                }
            }
            #expect(simulator.state.notifications().isEmpty)
        }
    }

    @Test("after shutdown, send throws shutDown")
    func sendAfterShutdown() async throws {
        try await Fixture.run { simulator in
            let client = FCMClient(configuration: simulator.configuration(), eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Fixture.quietLogger)
            try await client.shutdown()
            do throws(FCMClientError) {
                _ = try await client.send(
                    Fixture.dataMessage(token: "d", mId: "s").request(project: Self.projectA), account: try! Fixture.projectA.serviceAccount())
                Issue.record("the send should fail")
            } catch {
                #expect(error.code == .shutDown)
                #expect(!error.isRetriable)
            }
        }
    }
}

/// A flag tasks can share.
final class Flag: Sendable {
    let value = Atomic<Bool>(false)
    var isSet: Bool { self.value.load(ordering: .relaxed) }
}
