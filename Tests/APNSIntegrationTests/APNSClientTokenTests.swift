import APNS
import Crypto
import Foundation
import MetricsTestKit
import ProviderSimulatorCore
import PushTestSupport
import Synchronization
import Testing

extension APNSClientIntegrationTests {
    @Suite("provider tokens")
    struct ProviderTokens {
        let key = TestKey()

        func refreshes(_ metrics: TestMetrics) throws -> Int64 {
            try metrics.expectCounter("push_apns_token_refreshes_total").totalValue
        }

        @Test("one token for 500 sends over two connections; one new token after 51 minutes; none when asked after 10 more", arguments: SendAPI.allCases)
        func reuseAndRefresh(api: SendAPI) async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                let clock = ShiftedClock()
                let metrics = TestMetrics()
                try await Harness.withClient(Harness.configuration(for: server, connections: 2), clock: clock, metrics: metrics) { client in
                    let credentials = try self.key.credentials()
                    let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                        for index in 0..<500 {
                            group.addTask {
                                try await client.send(Harness.request(mId: "reuse-\(index)"), credentials: credentials, environment: .production, via: api)
                                    .status
                            }
                        }
                        return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                    }
                    #expect(statuses == [200: 500])
                    #expect(try self.refreshes(metrics) == 0)
                    #expect(client.openConnections == 2)
                    #expect(server.state.counters.connections == 2)
                    // Both connections were raised past the one stream of a new token-auth connection.
                    #expect(server.state.counters.settingsUpdates == 2)

                    clock.advance(by: .seconds(51 * 60))
                    for _ in 0..<20 {
                        #expect(try await client.send(Harness.request(), credentials: credentials, environment: .production).status == 200)
                    }
                    #expect(try self.refreshes(metrics) == 1)

                    // Ten minutes later APNs (a fault here) calls the token expired: refreshing now
                    // would break the 20-minute floor, so the client answers with the rejection.
                    clock.advance(by: .seconds(10 * 60))
                    _ = server.state.updateFaults {
                        $0.failPercent = 100
                        $0.failStatus = 403
                        $0.failReason = "ExpiredProviderToken"
                    }
                    let refused = try await client.send(Harness.request(), credentials: credentials, environment: .production)
                    #expect(refused.outcome == .credentialRejected(reason: .expiredProviderToken))
                    #expect(try self.refreshes(metrics) == 1)
                    #expect(server.state.counters.byReason["ExpiredProviderToken"] == 1)
                    #expect(server.state.counters.byReason["TooManyProviderTokenUpdates"] == nil)
                    #expect(server.state.counters.accepted == 520)
                }
            }
        }

        @Test(
            "a token store that answers late: 50 concurrent first sends wait for one exchange; cancelling one waiter fails only that one",
            arguments: SendAPI.allCases)
        func sharedRefreshAndCancelledWaiter(api: SendAPI) async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                let store = HeldTokenStore()
                try await Harness.withClient(Harness.configuration(for: server), tokenStore: store) { client in
                    let credentials = try self.key.credentials()
                    try await withThrowingTaskGroup(of: Int.self) { group in
                        // The first send finds no token and asks the store, which holds its answer.
                        group.addTask {
                            try await client.send(Harness.request(mId: "first"), credentials: credentials, environment: .production, via: api).status
                        }
                        try await eventually(within: .seconds(10), "store.exchanges == 1") { store.exchanges == 1 }
                        // A waiter cancelled while the exchange is under way.
                        async let cancelled: APNSClientError.Code? = {
                            await withTaskGroup(of: APNSClientError.Code?.self) { inner in
                                inner.addTask {
                                    do throws(APNSClientError) {
                                        _ = try await client.send(
                                            Harness.request(mId: "cancelled"), credentials: credentials, environment: .production, via: api)
                                        return nil
                                    } catch {
                                        return error.code
                                    }
                                }
                                inner.cancelAll()
                                return await inner.next()!
                            }
                        }()
                        for index in 0..<49 {
                            group.addTask {
                                try await client.send(Harness.request(mId: "waiting-\(index)"), credentials: credentials, environment: .production, via: api)
                                    .status
                            }
                        }
                        #expect(await cancelled == .cancelled)
                        store.release()
                        let statuses = try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                        #expect(statuses == [200: 50])
                    }
                    #expect(store.exchanges == 1)
                }
            }
        }

        @Test("ExpiredProviderToken: refused while the token is under 20 minutes old, refreshed and resent once it is older")
        func expiredProviderToken() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                // The client's clock is 65 minutes behind the simulator's: APNs sees its tokens as expired.
                let clock = ShiftedClock(offset: .seconds(-65 * 60))
                let metrics = TestMetrics()
                try await Harness.withClient(Harness.configuration(for: server), clock: clock, metrics: metrics) { client in
                    let credentials = try self.key.credentials()
                    let first = try await client.send(Harness.request(), credentials: credentials, environment: .production)
                    #expect(first.outcome == .credentialRejected(reason: .expiredProviderToken))
                    #expect(try self.refreshes(metrics) == 0)
                    #expect(server.state.counters.byReason["ExpiredProviderToken"] == 1)

                    // 25 minutes later (client time) the token may be replaced: the simulator sees
                    // the new one as 40 minutes old, which it accepts.
                    clock.advance(by: .seconds(25 * 60))
                    let second = try await client.send(Harness.request(), credentials: credentials, environment: .production)
                    #expect(second.status == 200)
                    #expect(try self.refreshes(metrics) == 1)
                    #expect(server.state.counters.byReason["ExpiredProviderToken"] == 2)
                    #expect(server.state.counters.accepted == 1)

                    // The new token is reused from now on.
                    #expect(try await client.send(Harness.request(), credentials: credentials, environment: .production).status == 200)
                    #expect(try self.refreshes(metrics) == 1)
                }
            }
        }

        @Test("ExpiredProviderToken is resent once with a new token, not twice", arguments: SendAPI.allCases)
        func expiredProviderTokenResentOnce(api: SendAPI) async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                let clock = ShiftedClock()
                let metrics = TestMetrics()
                try await Harness.withClient(Harness.configuration(for: server), clock: clock, metrics: metrics) { client in
                    let credentials = try self.key.credentials()
                    #expect(try await client.send(Harness.request(), credentials: credentials, environment: .production, via: api).status == 200)
                    clock.advance(by: .seconds(30 * 60))
                    _ = server.state.updateFaults {
                        $0.failPercent = 100
                        $0.failStatus = 403
                        $0.failReason = "ExpiredProviderToken"
                    }
                    let response = try await client.send(Harness.request(), credentials: credentials, environment: .production, via: api)
                    #expect(response.outcome == .credentialRejected(reason: .expiredProviderToken))
                    #expect(server.state.counters.byReason["ExpiredProviderToken"] == 2)
                    #expect(try self.refreshes(metrics) == 1)

                    _ = server.state.updateFaults { $0.failPercent = 0 }
                    #expect(try await client.send(Harness.request(), credentials: credentials, environment: .production, via: api).status == 200)
                    #expect(server.state.counters.byReason["TooManyProviderTokenUpdates"] == nil)
                }
            }
        }

        @Test("two keys claiming the same team and key id (a stale app's credential): each signs its own tokens, the valid one is accepted")
        func sameIdsAnotherKey() async throws {
            // Seen in the fault-injection suite: messages left from an earlier run, whose app's
            // .p8 had the same team and key id as the current one but another key, made the
            // client share one token between the two, and the current app's sends were refused.
            var stale = TestKey()
            stale.key = P256.Signing.PrivateKey()
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let staleCredentials = try stale.credentials(id: "sha256:stale")
                    let current = try self.key.credentials(id: "sha256:current")
                    let refused = try await client.send(Harness.request(), credentials: staleCredentials, environment: .production)
                    #expect(refused.reason == .invalidProviderToken)
                    let accepted = try await client.send(Harness.request(), credentials: current, environment: .production)
                    #expect(accepted.status == 200)
                    #expect(try await client.send(Harness.request(), credentials: staleCredentials, environment: .production).reason == .invalidProviderToken)
                    #expect(try await client.send(Harness.request(), credentials: current, environment: .production).status == 200)
                }
            }
        }

        @Test("two keys of two teams in one client: interleaved concurrent sends, no UnrelatedKeyIdInToken")
        func manyKeys() async throws {
            let other = TestKey(teamId: "TEAM654321", keyId: "KEY7654321")
            try await Harness.withSimulator(keys: [self.key, other]) { server in
                let metrics = TestMetrics()
                try await Harness.withClient(Harness.configuration(for: server), metrics: metrics) { client in
                    let first = try self.key.credentials()
                    let second = try other.credentials()
                    let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                        for index in 0..<400 {
                            let credentials = index % 2 == 0 ? first : second
                            let environment: APNSEnvironment = index % 4 < 2 ? .production : .sandbox
                            group.addTask {
                                try await client.send(Harness.request(), credentials: credentials, environment: environment).status
                            }
                        }
                        return try await group.reduce(into: [Int: Int]()) { $0[$1, default: 0] += 1 }
                    }
                    #expect(statuses == [200: 400])
                    #expect(server.state.counters.byReason.isEmpty)
                    // Four pools (2 keys x 2 environments) of two connections each.
                    #expect(client.openConnections == 8)
                    #expect(try self.refreshes(metrics) == 0)
                }
            }
        }

        @Test("UnrelatedKeyIdInToken and IdleTimeout: the connection is replaced and the push resent once", arguments: SendAPI.allCases)
        func connectionReplaced(api: SendAPI) async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server, connections: 1)) { client in
                    let credentials = try self.key.credentials()
                    #expect(try await client.send(Harness.request(), credentials: credentials, environment: .production, via: api).status == 200)
                    #expect(server.state.counters.connections == 1)
                    for (status, reason) in [(403, APNSReason.unrelatedKeyIdInToken), (400, .idleTimeout)] {
                        _ = server.state.updateFaults {
                            $0.failPercent = 100
                            $0.failStatus = status
                            $0.failReason = reason.rawValue
                        }
                        let connectionsBefore = server.state.counters.connections
                        let response = try await client.send(Harness.request(), credentials: credentials, environment: .production, via: api)
                        #expect(response.outcome == .retry(reason: reason, after: nil))
                        #expect(server.state.counters.byReason[reason.rawValue] == 2)
                        #expect(server.state.counters.connections == connectionsBefore + 1)
                    }
                    _ = server.state.updateFaults { $0.failPercent = 0 }
                    #expect(try await client.send(Harness.request(), credentials: credentials, environment: .production, via: api).status == 200)
                    // The replaced connections closed once drained.
                    try await eventually(within: .seconds(10), "client.openConnections == 1 && server.connections.count == 1") {
                        client.openConnections == 1 && server.connections.count == 1
                    }
                }
            }
        }
    }
}

/// A token store that keeps the candidate and holds every `exchange` until `release()`.
private final class HeldTokenStore: APNSProviderTokenStore {
    private struct State {
        var exchanges = 0
        var released = false
        var held: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    var exchanges: Int { self.state.withLock { $0.exchanges } }

    func release() {
        let held = self.state.withLock { state in
            state.released = true
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }

    func exchange(_ candidate: APNSSharedProviderToken, replacingIssuedBefore: Date) async throws -> APNSSharedProviderToken {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let released = self.state.withLock { state in
                state.exchanges += 1
                if !state.released { state.held.append(continuation) }
                return state.released
            }
            if released { continuation.resume() }
        }
        return candidate
    }

    func current(teamId: String, keyId: String, keyFingerprint: String) async throws -> APNSSharedProviderToken? { nil }
}
