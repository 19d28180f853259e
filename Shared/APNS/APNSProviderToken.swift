import Crypto
import Foundation
import Logging
import PushWire
import Synchronization

/// The provider token (ES256 JWT) of one signing key, shared by every connection and pool of an
/// `APNSClient` that uses the key and, with an `APNSProviderTokenStore`, by every process of the
/// deployment. APNs wants one token per key reused for up to an hour, and refuses a new one
/// within 20 minutes of the previous (TooManyProviderTokenUpdates), so the token is obtained
/// lazily, reused until `refreshInterval` has passed, and never replaced before it is 20 minutes
/// old, whatever APNs says. Callers that find it due while a refresh is under way wait for that
/// one (one mint and one store round trip per refresh, not one per request).
final class APNSProviderToken: Sendable {
    struct Minted: Sendable, Equatable {
        /// The compact JWT; never logged.
        let jwt: String
        let issuedAt: Date
        /// `bearer <jwt>`, the value of the requests' authorization header, built once per token
        /// rather than once per request.
        let authorization: String

        init(jwt: String, issuedAt: Date) {
            self.jwt = jwt
            self.issuedAt = issuedAt
            self.authorization = "bearer \(jwt)"
        }
    }

    /// A caller waiting for the refresh another caller performs: resumed with its result, or
    /// with nil when that caller was cancelled before it finished (the waiter decides again).
    private typealias Waiter = CheckedContinuation<Result<Minted, APNSClientError>?, Never>

    private struct State {
        var current: Minted?
        /// Whether a caller is obtaining a new token now; the others wait for it.
        var refreshing = false
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiterID: UInt64 = 0
        /// Waiters decided but not yet registered with their continuation.
        var unregisteredWaiters: Set<UInt64> = []
        /// Waiters cancelled before they registered their continuation.
        var cancelledWaiters: Set<UInt64> = []

        mutating func newWaiter() -> UInt64 {
            self.nextWaiterID += 1
            self.unregisteredWaiters.insert(self.nextWaiterID)
            return self.nextWaiterID
        }
    }

    let teamId: String
    let keyId: String
    /// SHA-256 of the public key, hex: what the token store keys tokens by besides the ids.
    let keyFingerprint: String
    private let key: P256.Signing.PrivateKey
    private let refreshInterval: Duration
    private let store: (any APNSProviderTokenStore)?
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let state = Mutex(State())
    /// Called after each replacement of a token (not the first one).
    private let onRefresh: @Sendable () -> Void

    init(
        teamId: String,
        keyId: String,
        key: P256.Signing.PrivateKey,
        refreshInterval: Duration,
        store: (any APNSProviderTokenStore)? = nil,
        logger: Logger = Logger(label: "apns-client"),
        now: @escaping @Sendable () -> Date,
        onRefresh: @escaping @Sendable () -> Void
    ) {
        self.teamId = teamId
        self.keyId = keyId
        self.key = key
        self.keyFingerprint = Self.fingerprint(of: key)
        self.refreshInterval = refreshInterval
        self.store = store
        self.logger = logger
        self.now = now
        self.onRefresh = onRefresh
    }

    /// SHA-256 of the public key, hex.
    static func fingerprint(of key: P256.Signing.PrivateKey) -> String {
        SHA256.hash(data: key.publicKey.x963Representation).map { String(format: "%02x", $0) }.joined()
    }

    /// What a client shares one token per: the ids and the key itself. Two keys claiming the same
    /// team and key id (a misconfigured app, a rotated .p8 re-using its id) get a token each, so
    /// neither signs for the other.
    var name: String { "\(self.teamId):\(self.keyId):\(self.keyFingerprint)" }

    static func name(teamId: String, keyId: String, key: P256.Signing.PrivateKey) -> String {
        "\(teamId):\(keyId):\(Self.fingerprint(of: key))"
    }

    /// The current token when it is younger than `refreshInterval`, without waiting; nil when
    /// `token()` has work to do (a first token, a refresh).
    func currentToken() -> Minted? {
        let now = self.now()
        return self.state.withLock { state in
            guard let existing = state.current, now.timeIntervalSince(existing.issuedAt) < self.refreshInterval.seconds else { return nil }
            return existing
        }
    }

    /// The token to send now: the current one while younger than `refreshInterval`; else the
    /// one a refresh obtains (this caller's, or the one under way when it came).
    func token() async throws(APNSClientError) -> Minted {
        while true {
            let now = self.now()
            let next: Next = self.state.withLock { state in
                if let existing = state.current, now.timeIntervalSince(existing.issuedAt) < self.refreshInterval.seconds {
                    return .ready(existing)
                }
                if state.refreshing { return .wait(state.newWaiter()) }
                state.refreshing = true
                return .obtain(replacingIssuedBefore: now.addingTimeInterval(-self.refreshInterval.seconds))
            }
            switch next {
            case .ready(let token):
                return token
            case .obtain(let bound):
                return try await self.obtain(at: now, replacingIssuedBefore: bound).get()
            case .wait(let waiterID):
                if let result = await self.wait(waiterID) { return try result.get() }
            // The caller refreshing was cancelled: decide again (one waiter takes it over).
            }
        }
    }

    /// What a caller does about the token: use one, obtain one (every other caller waits for
    /// it), or wait for the refresh under way.
    private enum Next {
        case ready(Minted)
        case obtain(replacingIssuedBefore: Date)
        case wait(UInt64)
    }

    /// APNs answered ExpiredProviderToken for `rejected`. Returns the token to resend with: a
    /// newer one another request (or process) already obtained, a new one when `rejected` is at
    /// least 20 minutes old, or nil when replacing it now would break the 20-minute floor (a
    /// clock problem: the sender gets the answer).
    func replace(expired rejected: Minted) async throws(APNSClientError) -> Minted? {
        while true {
            let now = self.now()
            let next: Next? = self.state.withLock { state in
                if state.refreshing { return .wait(state.newWaiter()) }
                if let existing = state.current, existing != rejected { return .ready(existing) }
                guard now.timeIntervalSince(rejected.issuedAt) >= APNSClientConfiguration.minimumTokenRefreshInterval.seconds else {
                    return nil
                }
                // Replace the rejected token (or anything as old) for everyone.
                state.refreshing = true
                return .obtain(replacingIssuedBefore: rejected.issuedAt.addingTimeInterval(1))
            }
            let replacement: Minted
            switch next {
            case nil:
                return nil
            case .ready(let token):
                replacement = token
            case .obtain(let bound):
                replacement = try await self.obtain(at: now, replacingIssuedBefore: bound).get()
            case .wait(let waiterID):
                guard let result = await self.wait(waiterID) else { continue }
                replacement = try result.get()
            }
            return replacement == rejected ? nil : replacement
        }
    }

    /// APNs answered TooManyProviderTokenUpdates for `refused`: another process put a token for
    /// this key in force first. Returns the store's token when it is another one (adopted for
    /// every later request), nil otherwise.
    func adoptShared(refused: Minted) async -> Minted? {
        guard let store else { return nil }
        do {
            guard let shared = try await store.current(teamId: self.teamId, keyId: self.keyId, keyFingerprint: self.keyFingerprint) else { return nil }
            let adopted = Minted(jwt: shared.jwt, issuedAt: shared.issuedAt)
            guard adopted != refused else { return nil }
            self.state.withLock { state in
                if state.current == refused { state.current = adopted }
            }
            return adopted
        } catch {
            self.logger.warning("Could not read the shared APNs provider token", metadata: ["apns.keyId": "\(self.keyId)", "error": "\(error)"])
            return nil
        }
    }

    /// Waits for the refresh another caller performs. Cancelling this caller ends its wait only
    /// (with `cancelled`); the refresh and the other waiters carry on.
    private func wait(_ waiterID: UInt64) async -> Result<Minted, APNSClientError>? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: Waiter) in
                let resumeNow: Result<Minted, APNSClientError>?? = self.state.withLock { state in
                    state.unregisteredWaiters.remove(waiterID)
                    if state.cancelledWaiters.remove(waiterID) != nil { return .some(.failure(Self.cancelled)) }
                    guard state.refreshing else {
                        // The refresh finished between the decision and now: decide again.
                        return .some(nil)
                    }
                    state.waiters[waiterID] = continuation
                    return .none
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            let waiter: Waiter? = self.state.withLock { state in
                if let waiter = state.waiters.removeValue(forKey: waiterID) { return waiter }
                if state.unregisteredWaiters.remove(waiterID) != nil { state.cancelledWaiters.insert(waiterID) }
                return nil
            }
            waiter?.resume(returning: .failure(Self.cancelled))
        }
    }

    private static let cancelled = APNSClientError(
        code: .cancelled, isRetriable: true, mayHaveBeenDelivered: false, detail: "cancelled while waiting for a provider token"
    )

    /// Mints a candidate and, with a store, lets the store pick the token in force; records the
    /// result as current and hands it to the callers waiting. Runs once per refresh, in the task
    /// of the caller that found the refresh due. If that caller is cancelled while the store
    /// answers, the waiting callers are told to decide again (one of them refreshes) rather than
    /// given this process's own token, which the store did not agree to.
    private func obtain(at now: Date, replacingIssuedBefore bound: Date) async -> Result<Minted, APNSClientError> {
        var result: Result<Minted, APNSClientError>
        var handOver = false
        do throws(APNSClientError) {
            var token = try self.mint(at: now)
            if let store {
                do {
                    let candidate = APNSSharedProviderToken(
                        teamId: self.teamId, keyId: self.keyId, keyFingerprint: self.keyFingerprint, jwt: token.jwt, issuedAt: token.issuedAt
                    )
                    let agreed = try await store.exchange(candidate, replacingIssuedBefore: bound)
                    token = Minted(jwt: agreed.jwt, issuedAt: agreed.issuedAt)
                } catch  where Task.isCancelled {
                    handOver = true
                } catch {
                    // The process's own token still works when it is the only one for the key.
                    self.logger.warning(
                        "Could not share the APNs provider token; using this process's own",
                        metadata: ["apns.keyId": "\(self.keyId)", "error": "\(error)"]
                    )
                }
            }
            result = .success(token)
        } catch {
            result = .failure(error)
        }
        if handOver { result = .failure(Self.cancelled) }
        let (waiters, replaced): ([Waiter], Bool) = self.state.withLock { state in
            state.refreshing = false
            var replaced = false
            if !handOver, case .success(let token) = result {
                replaced = state.current != nil && state.current != token
                state.current = token
            }
            defer { state.waiters = [:] }
            return (Array(state.waiters.values), replaced)
        }
        if replaced { self.onRefresh() }
        for waiter in waiters {
            waiter.resume(returning: handOver ? nil : result)
        }
        return result
    }

    private func mint(at date: Date) throws(APNSClientError) -> Minted {
        struct Header: Encodable {
            var alg = "ES256"
            var kid: String
        }
        struct Claims: Encodable {
            var iss: String
            var iat: Int64
        }
        let issuedAt = Int64(date.timeIntervalSince1970.rounded(.down))
        do {
            let encoder = JSONEncoder()
            encoder.outputFormatting = .sortedKeys
            let header = Base64URL.encode(try encoder.encode(Header(kid: self.keyId)))
            let claims = Base64URL.encode(try encoder.encode(Claims(iss: self.teamId, iat: issuedAt)))
            let signingInput = "\(header).\(claims)"
            let signature = try self.key.signature(for: Data(signingInput.utf8))
            return Minted(
                jwt: "\(signingInput).\(Base64URL.encode(signature.rawRepresentation))",
                issuedAt: Date(timeIntervalSince1970: TimeInterval(issuedAt))
            )
        } catch {
            throw .badCredentials("could not sign a provider token for key \(self.keyId)")
        }
    }
}
