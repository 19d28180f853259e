import Foundation
import Metrics
import Synchronization

/// One cached OAuth access token per service account (by `FCMServiceAccount.id`), shared by every
/// connection and caller.
///
/// - The first caller that finds no usable token fetches one; callers arriving meanwhile wait for
///   that fetch instead of starting their own (one token request, however many senders).
/// - Past `refreshAt` the next caller refreshes while the others keep using the still valid old
///   token; only when no valid token exists do they wait.
/// - `invalidate` drops a token FCM refused (401), but only if it is still the cached one, so
///   many concurrent 401s on the same token cause one refresh.
/// - A fetch that fails is not cached: its waiters get the error, the next call tries again. When
///   the fetching caller is cancelled, a waiting caller takes over the fetch.
package final class FCMAccessTokenProvider: Sendable {
    /// Exchanges an account's signed assertion for a token and its lifetime (`expires_in`).
    package typealias Fetch = @Sendable (FCMServiceAccount) async throws(FCMClientError) -> (value: String, expiresIn: Duration)

    private typealias Waiter = CheckedContinuation<Result<FCMAccessToken, FCMClientError>?, Never>

    private struct Entry {
        var token: FCMAccessToken?
        var refreshing = false
        var waiters: [UInt64: Waiter] = [:]
    }

    private struct State {
        var entries: [String: Entry] = [:]
        var nextWaiterID: UInt64 = 0
        /// Waiters decided but not yet registered with their continuation.
        var unregisteredWaiters: Set<UInt64> = []
        /// Waiters cancelled before they registered their continuation.
        var cancelledWaiters: Set<UInt64> = []
    }

    private enum Decision {
        case use(FCMAccessToken)
        case fetch
        case wait(UInt64)
    }

    private let refreshMargin: Duration
    private let now: @Sendable () -> Date
    private let fetch: Fetch
    private let state = Mutex(State())
    private let refreshes = Counter(label: "push_fcm_token_refreshes_total", dimensions: [("result", "ok")])
    private let failedRefreshes = Counter(label: "push_fcm_token_refreshes_total", dimensions: [("result", "error")])

    package init(refreshMargin: Duration, now: @escaping @Sendable () -> Date = Date.init, fetch: @escaping Fetch) {
        self.refreshMargin = refreshMargin
        self.now = now
        self.fetch = fetch
    }

    /// A token for the account that is valid now: cached, or fetched once for all callers.
    package func token(for account: FCMServiceAccount) async throws(FCMClientError) -> FCMAccessToken {
        while true {
            if Task.isCancelled {
                throw FCMClientError(.cancelled, "cancelled while waiting for an access token", isRetriable: true)
            }
            switch self.decide(accountID: account.id) {
            case .use(let token):
                return token
            case .fetch:
                return try await self.fetchAndPublish(account).get()
            case .wait(let waiterID):
                if let result = await self.wait(accountID: account.id, waiterID: waiterID) {
                    return try result.get()
                }
            // The fetching caller was cancelled: decide again (one waiter becomes the fetcher).
            }
        }
    }

    /// Drops `token` if it is still the cached token of the account (FCM answered 401 to it).
    package func invalidate(accountID: String, token: FCMAccessToken) {
        self.state.withLock { state in
            if state.entries[accountID]?.token?.value == token.value {
                state.entries[accountID]?.token = nil
            }
        }
    }

    /// The account's cached token while it needs no refresh: what `token(for:)` returns at once.
    package func usableToken(accountID: String) -> FCMAccessToken? {
        let now = self.now()
        return self.state.withLock { state in
            guard let token = state.entries[accountID]?.token, now < token.refreshAt else { return nil }
            return token
        }
    }

    /// The cached token of an account, if any (for tests and diagnostics).
    package func cachedToken(accountID: String) -> FCMAccessToken? {
        self.state.withLock { $0.entries[accountID]?.token }
    }

    private func decide(accountID: String) -> Decision {
        let now = self.now()
        return self.state.withLock { state in
            var entry = state.entries[accountID] ?? Entry()
            defer { state.entries[accountID] = entry }
            if let token = entry.token, now < token.refreshAt {
                return .use(token)
            }
            if entry.refreshing {
                if let token = entry.token, now < token.expiresAt {
                    return .use(token)
                }
                state.nextWaiterID += 1
                state.unregisteredWaiters.insert(state.nextWaiterID)
                return .wait(state.nextWaiterID)
            }
            entry.refreshing = true
            return .fetch
        }
    }

    private func wait(accountID: String, waiterID: UInt64) async -> Result<FCMAccessToken, FCMClientError>? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let cancelledEarly = self.state.withLock { state in
                    if state.cancelledWaiters.remove(waiterID) != nil { return true }
                    state.unregisteredWaiters.remove(waiterID)
                    if state.entries[accountID]?.refreshing == true {
                        state.entries[accountID]?.waiters[waiterID] = continuation
                        return false
                    }
                    // The fetch finished between the decision and now: decide again.
                    continuation.resume(returning: nil)
                    return false
                }
                if cancelledEarly {
                    continuation.resume(returning: .failure(Self.cancelled))
                }
            }
        } onCancel: {
            let waiter: Waiter? = self.state.withLock { state in
                if let waiter = state.entries[accountID]?.waiters.removeValue(forKey: waiterID) { return waiter }
                if state.unregisteredWaiters.remove(waiterID) != nil {
                    state.cancelledWaiters.insert(waiterID)
                }
                return nil
            }
            waiter?.resume(returning: .failure(Self.cancelled))
        }
    }

    private static let cancelled = FCMClientError(.cancelled, "cancelled while waiting for an access token", isRetriable: true)

    private func fetchAndPublish(_ account: FCMServiceAccount) async -> Result<FCMAccessToken, FCMClientError> {
        let requestedAt = self.now()
        let result: Result<FCMAccessToken, FCMClientError>
        do throws(FCMClientError) {
            let fetched = try await self.fetch(account)
            result = .success(
                FCMAccessToken(value: fetched.value, requestedAt: requestedAt, expiresIn: fetched.expiresIn, refreshMargin: self.refreshMargin)
            )
            self.refreshes.increment()
        } catch {
            result = .failure(error)
            self.failedRefreshes.increment()
        }
        let waiters: [Waiter] = self.state.withLock { state in
            var entry = state.entries[account.id] ?? Entry()
            entry.refreshing = false
            if case .success(let token) = result { entry.token = token }
            let waiters = Array(entry.waiters.values)
            entry.waiters = [:]
            state.entries[account.id] = entry
            return waiters
        }
        let handOver: Bool
        if case .failure(let error) = result, error.code == .cancelled { handOver = true } else { handOver = false }
        for waiter in waiters {
            waiter.resume(returning: handOver ? nil : result)
        }
        return result
    }
}
