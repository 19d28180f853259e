import Foundation
import Logging
import Metrics
import NIOCore
import Synchronization

/// Sends notifications to APNs over long-lived HTTP/2 connections, one pool per (environment,
/// credentials), with one provider token per signing key shared by every pool that uses it.
///
/// The client handles what a sender should never see: an expired provider token (one new token,
/// respecting the 20-minute floor, and one resend), and a connection APNs wants replaced
/// (UnrelatedKeyIdInToken, IdleTimeout: one new connection and one resend). Everything else is
/// the caller's, classified by `APNSResponse.outcome`.
package final class APNSClient: Sendable {
    private struct PoolKey: Hashable {
        var environment: APNSEnvironment
        var credentialsId: String
    }

    private struct State {
        var pools: [PoolKey: APNSConnectionPool] = [:]
        var tokens: [String: APNSProviderToken] = [:]
        var isShutDown = false
    }

    private let configuration: APNSClientConfiguration
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let state = Mutex(State())
    private let connectionCount: APNSConnectionCount
    private let tokenRefreshes: Counter
    private let tokenStore: (any APNSProviderTokenStore)?

    /// - Parameters:
    ///   - now: the wall clock provider tokens are dated and aged by (injected by tests).
    ///   - metricsFactory: where `push_apns_token_refreshes_total` and `push_apns_connections` go.
    ///   - tokenStore: where the processes of a deployment agree on one provider token per key
    ///     (nil: one token per key in this process only).
    package init(
        configuration: APNSClientConfiguration,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init,
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        tokenStore: (any APNSProviderTokenStore)? = nil
    ) {
        self.tokenStore = tokenStore
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
        self.now = now
        self.connectionCount = APNSConnectionCount(factory: metricsFactory)
        self.tokenRefreshes = Counter(label: "push_apns_token_refreshes_total", dimensions: [], factory: metricsFactory)
    }

    /// Open HTTP/2 connections across all pools.
    package var openConnections: Int { self.connectionCount.value }

    /// How many times a request that provably did not reach APNs is sent again at once.
    static let unsentResends = 3

    /// Sends one notification on the pool for (environment, credentials.id), creating the pool on
    /// first use. Returns APNs's answer whatever its status; throws only when no answer came.
    /// Resends at most once each: after a new provider token (ExpiredProviderToken), with the
    /// token store's token when APNs refused this process's (TooManyProviderTokenUpdates), on a
    /// new connection (UnrelatedKeyIdInToken, IdleTimeout), and when a closing connection
    /// provably did not send the request.
    package func send(_ request: APNSRequest, credentials: APNSCredentials, environment: APNSEnvironment) async throws(APNSClientError) -> APNSResponse {
        try await self.send(request, credentials: credentials, environment: environment, first: nil)
    }

    /// `send` without a task, for callers that send many notifications from callbacks (the
    /// apns-sender): `completion` is called once, usually on the connection's event loop.
    ///
    /// It takes the path that needs no waiting: the pool exists or is created at once, its
    /// provider token is current, and APNs's answer needs no resend. When the send needs to wait
    /// (a first or refreshed token, a resend on a new connection or with another token),
    /// `completion` gets `.needsAsync` and the caller continues it with `send(continuing:)` from
    /// a task it owns; the async `send`'s rules apply from there, and the answer already received
    /// is not sent again.
    package func send(
        _ request: APNSRequest, credentials: APNSCredentials, environment: APNSEnvironment,
        completion: @escaping @Sendable (CallbackResult) -> Void
    ) {
        let pool: APNSConnectionPool
        do {
            pool = try self.pool(for: credentials, environment: environment)
        } catch {
            completion(.failed(error))
            return
        }
        let needsAsync: @Sendable (FirstAnswer?) -> Void = { first in
            completion(.needsAsync(PendingSend(request: request, credentials: credentials, environment: environment, first: first)))
        }
        var bearer: APNSProviderToken.Minted?
        if let providerToken = pool.providerToken {
            guard let current = providerToken.currentToken() else { return needsAsync(nil) }
            bearer = current
        }
        pool.start(request, authorization: bearer?.authorization) { [bearer] result in
            switch result {
            case .success(let answer):
                switch answer.response.reason {
                case .expiredProviderToken?, .tooManyProviderTokenUpdates?, .unrelatedKeyIdInToken?, .idleTimeout?:
                    needsAsync(FirstAnswer(answer: answer, bearer: bearer))
                default:
                    completion(.answered(answer.response))
                }
            case .failure(let error) where error.code == .connectionClosed && !error.mayHaveBeenDelivered:
                needsAsync(nil)
            case .failure(let error):
                completion(.failed(error))
            }
        }
    }

    /// What the callback `send` ends with.
    package enum CallbackResult: Sendable {
        /// APNs's answer, whatever its status.
        case answered(APNSResponse)
        /// No answer came, and none will (the async `send` would throw this too).
        case failed(APNSClientError)
        /// The send must wait for something: continue it with `send(continuing:)`.
        case needsAsync(PendingSend)
    }

    /// A send the callback `send` leaves to the async one: the request, and the answer it got
    /// when that answer asks for a resend.
    package struct PendingSend: Sendable {
        fileprivate var request: APNSRequest
        fileprivate var credentials: APNSCredentials
        fileprivate var environment: APNSEnvironment
        fileprivate var first: FirstAnswer?
    }

    /// Finishes a send the callback `send` could not: obtains the provider token, resends as the
    /// async `send` does. Returns APNs's answer whatever its status; throws only when no answer came.
    package func send(continuing pending: PendingSend) async throws(APNSClientError) -> APNSResponse {
        try await self.send(pending.request, credentials: pending.credentials, environment: pending.environment, first: pending.first)
    }

    /// An answer the callback `send` got and leaves to the async one (a resend to decide).
    fileprivate struct FirstAnswer: Sendable {
        var answer: APNSConnectionPool.Answer
        var bearer: APNSProviderToken.Minted?
    }

    private func send(
        _ request: APNSRequest, credentials: APNSCredentials, environment: APNSEnvironment, first: FirstAnswer?
    ) async throws(APNSClientError) -> APNSResponse {
        let pool = try self.pool(for: credentials, environment: environment)
        var refreshedToken = false
        var adoptedSharedToken = false
        var replacedConnection = false
        var unsentResends = 0
        var chosen: (slot: APNSConnectionSlot, connection: APNSConnection)?
        var first = first
        while true {
            let bearer: APNSProviderToken.Minted?
            let answer: APNSConnectionPool.Answer
            if let given = first {
                first = nil
                (bearer, answer) = (given.bearer, given.answer)
            } else {
                bearer = try await pool.providerToken?.token()
                do {
                    answer = try await pool.execute(request, authorization: bearer?.authorization, on: chosen)
                } catch  where error.code == .connectionClosed && !error.mayHaveBeenDelivered && unsentResends < Self.unsentResends {
                    // The connection was closing (GOAWAY) before the request went out: sending it
                    // on another connection cannot duplicate it. Bounded, because the other
                    // connection may be closing too (a GOAWAY on every connection at once).
                    unsentResends += 1
                    chosen = nil
                    continue
                }
            }
            let (response, slot, connection) = answer
            chosen = nil
            switch response.reason {
            case .expiredProviderToken? where !refreshedToken:
                guard let providerToken = pool.providerToken, let bearer else { return response }
                refreshedToken = true
                guard try await providerToken.replace(expired: bearer) != nil else {
                    self.logger.warning(
                        "APNs called a provider token younger than 20 minutes expired; not refreshing (check the clock)",
                        metadata: ["apns.pool": "\(environment.rawValue)/\(credentials.id)", "apns.keyId": "\(providerToken.keyId)"]
                    )
                    return response
                }
            case .tooManyProviderTokenUpdates? where !adoptedSharedToken:
                // Another process's token for this key is in force: use the shared one.
                guard let providerToken = pool.providerToken, let bearer, await providerToken.adoptShared(refused: bearer) != nil else { return response }
                adoptedSharedToken = true
                self.logger.info(
                    "APNs refused this process's provider token; using the shared one",
                    metadata: ["apns.pool": "\(environment.rawValue)/\(credentials.id)", "apns.keyId": "\(providerToken.keyId)"]
                )
            case .unrelatedKeyIdInToken? where !replacedConnection, .idleTimeout? where !replacedConnection:
                replacedConnection = true
                self.logger.info(
                    "APNs asked for a new connection",
                    metadata: ["apns.pool": "\(environment.rawValue)/\(credentials.id)", "apns.reason": "\(response.reason!)"]
                )
                chosen = (slot, pool.replace(connection, in: slot))
            default:
                return response
            }
        }
    }

    /// Removes pools whose credentials are no longer used (after a rotation): their connections
    /// close once the requests they carry are answered. Provider tokens of keys no pool uses any
    /// more are forgotten.
    package func retirePools(except activeIds: Set<String>) async {
        let retired: [APNSConnectionPool] = self.state.withLock { state in
            let retired = state.pools.filter { !activeIds.contains($0.key.credentialsId) }
            for key in retired.keys { state.pools[key] = nil }
            let keysInUse = Set(state.pools.values.compactMap { $0.providerToken?.name })
            state.tokens = state.tokens.filter { keysInUse.contains($0.key) }
            return Array(retired.values)
        }
        for pool in retired {
            self.logger.info("retiring APNs pool", metadata: ["apns.pool": "\(pool.environment.rawValue)/\(pool.credentialsId)"])
            await pool.close()
        }
    }

    /// Closes every pool once its requests are answered; later sends throw `shutDown`.
    package func shutdown() async throws {
        let pools: [APNSConnectionPool] = self.state.withLock { state in
            state.isShutDown = true
            defer { state.pools = [:] }
            return Array(state.pools.values)
        }
        for pool in pools {
            await pool.close()
        }
    }

    private func pool(for credentials: APNSCredentials, environment: APNSEnvironment) throws(APNSClientError) -> APNSConnectionPool {
        let key = PoolKey(environment: environment, credentialsId: credentials.id)
        return try self.state.withLock { (state) throws(APNSClientError) -> APNSConnectionPool in
            guard !state.isShutDown else { throw APNSClientError.shutDown() }
            if let pool = state.pools[key] { return pool }
            var token: APNSProviderToken?
            if case .token(let teamId, let keyId, let signingKey) = credentials.material {
                let name = APNSProviderToken.name(teamId: teamId, keyId: keyId, key: signingKey)
                if let shared = state.tokens[name] {
                    token = shared
                } else {
                    let refreshes = self.tokenRefreshes
                    let created = APNSProviderToken(
                        teamId: teamId,
                        keyId: keyId,
                        key: signingKey,
                        refreshInterval: self.configuration.effectiveTokenRefreshInterval,
                        store: self.tokenStore,
                        logger: self.logger,
                        now: self.now,
                        onRefresh: { refreshes.increment() }
                    )
                    state.tokens[name] = created
                    token = created
                }
            }
            let pool = try APNSConnectionPool(
                environment: environment,
                credentials: credentials,
                providerToken: token,
                configuration: self.configuration,
                eventLoopGroup: self.eventLoopGroup,
                connectionCount: self.connectionCount,
                logger: self.logger
            )
            state.pools[key] = pool
            self.logger.info(
                "APNs pool created",
                metadata: ["apns.pool": "\(environment.rawValue)/\(credentials.id)", "apns.connections": "\(self.configuration.connectionsPerPool)"]
            )
            return pool
        }
    }
}
