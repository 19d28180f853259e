import FCM
import Foundation
import PushTestSupport
import Synchronization
import Testing

@Suite("FCMAccessTokenProvider: caching, single flight, refresh (fake token endpoint, injected clock)")
struct FCMAccessTokenProviderTests {
    /// A token endpoint that counts requests and can be slowed down or made to fail.
    final class FakeEndpoint: Sendable {
        let requests = Atomic<Int>(0)
        var count: Int { self.requests.load(ordering: .relaxed) }
        let delay: Duration
        let failure: FCMClientError?

        init(delay: Duration = .milliseconds(50), failure: FCMClientError? = nil) {
            self.delay = delay
            self.failure = failure
        }

        var fetch: FCMAccessTokenProvider.Fetch {
            { (_: FCMServiceAccount) async throws(FCMClientError) -> (value: String, expiresIn: Duration) in
                let number = self.requests.wrappingAdd(1, ordering: .relaxed).newValue
                try? await Task.sleep(for: self.delay)
                if let failure = self.failure { throw failure }
                return ("token-\(number)", .seconds(3600))
            }
        }
    }

    static let account = try! SimulatorFixture.projectA.serviceAccount()

    @Test("500 concurrent callers share one fetch and one token")
    func singleFlight() async throws {
        let endpoint = FakeEndpoint()
        let provider = FCMAccessTokenProvider(refreshMargin: .seconds(300), fetch: endpoint.fetch)
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<500 {
                group.addTask { try await provider.token(for: Self.account).value }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(values == ["token-1"])
        #expect(endpoint.count == 1)
    }

    @Test("the token is reused until expires_in - margin, then refreshed exactly once")
    func refreshAtMargin() async throws {
        let clock = ManualClock()
        let endpoint = FakeEndpoint()
        let provider = FCMAccessTokenProvider(refreshMargin: .seconds(300), now: clock.now, fetch: endpoint.fetch)
        #expect(try await provider.token(for: Self.account).value == "token-1")
        clock.advance(by: 3299)
        #expect(try await provider.token(for: Self.account).value == "token-1")
        clock.advance(by: 2)
        let values = try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 {
                group.addTask { try await provider.token(for: Self.account).value }
            }
            return try await group.reduce(into: [String]()) { $0.append($1) }
        }
        // The caller that refreshes waits for token-2; the others keep the still valid token-1.
        #expect(values.contains("token-2"))
        #expect(Set(values).isSubset(of: ["token-1", "token-2"]))
        #expect(endpoint.count == 2)
        #expect(try await provider.token(for: Self.account).value == "token-2")
        #expect(endpoint.count == 2)
    }

    @Test("invalidate drops only the token that was refused; a failed fetch reaches every waiter and is not cached")
    func invalidateAndFailure() async throws {
        let endpoint = FakeEndpoint()
        let provider = FCMAccessTokenProvider(refreshMargin: .seconds(300), fetch: endpoint.fetch)
        let first = try await provider.token(for: Self.account)
        provider.invalidate(accountID: Self.account.id, token: first)
        let second = try await provider.token(for: Self.account)
        #expect(second.value == "token-2")
        provider.invalidate(accountID: Self.account.id, token: first)  // stale: no effect
        #expect(try await provider.token(for: Self.account) == second)
        #expect(endpoint.count == 2)

        let failing = FakeEndpoint(failure: FCMClientError(.tokenEndpointFailed, "token endpoint answered 400 invalid_grant", isRetriable: false))
        let failingProvider = FCMAccessTokenProvider(refreshMargin: .seconds(300), fetch: failing.fetch)
        let codes = await withTaskGroup(of: FCMClientError.Code?.self) { group in
            for _ in 0..<50 {
                group.addTask {
                    do throws(FCMClientError) {
                        _ = try await failingProvider.token(for: Self.account)
                        return nil
                    } catch {
                        return error.code
                    }
                }
            }
            return await group.reduce(into: [FCMClientError.Code?]()) { $0.append($1) }
        }
        #expect(codes.allSatisfy { $0 == .tokenEndpointFailed })
        #expect(failing.count == 1)
        _ = try? await failingProvider.token(for: Self.account)
        #expect(failing.count == 2)
    }

    @Test("a cancelled waiter leaves at once; the fetch goes on for the others")
    func cancelledWaiter() async throws {
        let endpoint = FakeEndpoint(delay: .milliseconds(500))
        let provider = FCMAccessTokenProvider(refreshMargin: .seconds(300), fetch: endpoint.fetch)
        let leader = Task { try await provider.token(for: Self.account).value }
        try await Task.sleep(for: .milliseconds(50))
        let waiter = Task { () -> FCMClientError.Code? in
            do throws(FCMClientError) {
                _ = try await provider.token(for: Self.account)
                return nil
            } catch {
                return error.code
            }
        }
        try await Task.sleep(for: .milliseconds(50))
        waiter.cancel()
        #expect(await waiter.value == .cancelled)
        #expect(try await leader.value == "token-1")
        #expect(endpoint.count == 1)
    }

    @Test("a short-lived token is refreshed at half its lifetime when shorter than twice the margin")
    func shortLifetime() {
        let start = Date(timeIntervalSince1970: 1000)
        let token = FCMAccessToken(value: "t", requestedAt: start, expiresIn: .seconds(60), refreshMargin: .seconds(300))
        #expect(token.refreshAt == start.addingTimeInterval(30))
        #expect(token.expiresAt == start.addingTimeInterval(60))
        #expect(!token.description.contains("t,"))
        let long = FCMAccessToken(value: "t", requestedAt: start, expiresIn: .seconds(3600), refreshMargin: .seconds(300))
        #expect(long.refreshAt == start.addingTimeInterval(3300))
    }
}
