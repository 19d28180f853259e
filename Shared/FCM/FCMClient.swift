import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOSSL
import PushHTTP2
import PushWire
import Synchronization

/// Sends FCM HTTP v1 messages over long-lived HTTP/2 connections, with OAuth access tokens
/// fetched, cached and shared per service account, and a per-project pause after QUOTA_EXCEEDED.
///
/// Call `shutdown()` before dropping the client.
package final class FCMClient: Sendable {
    package let configuration: FCMClientConfiguration
    /// The per-project QUOTA_EXCEEDED pause and recovery `send` waits on.
    package let throttle: FCMProjectThrottle
    /// The cached access tokens `send` uses.
    package let accessTokens: FCMAccessTokenProvider
    private let connections: FCMSendConnections
    /// The send endpoint's path before `/v1/projects/...` (empty for FCM itself).
    private let pathPrefix: String
    private let tokenClient: HTTPClient
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let isShutDown = Atomic<Bool>(false)

    /// - Parameters:
    ///   - now: the clock for token expiry, the JWT's `iat` and the project throttle (tests inject one).
    package init(
        configuration: FCMClientConfiguration,
        eventLoopGroup: any EventLoopGroup,
        logger: Logger,
        now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.configuration = configuration
        self.logger = logger
        self.now = now
        let tls = Self.tlsConfiguration(configuration, logger: logger)
        let httpConfiguration = Self.httpConfiguration(configuration, tls: tls)
        // A base URL that is not https://host[:port] fails every send as a connect failure.
        let parsed = HTTP2Origin(url: configuration.baseURL)
        if parsed == nil {
            logger.error("the FCM base URL is not https://host[:port]; every send will fail", metadata: ["fcm.base_url": "\(configuration.baseURL)"])
        }
        let origin = parsed ?? HTTP2Origin(host: "invalid-base-url.invalid")
        self.pathPrefix = origin.pathPrefix
        let sslContext: NIOSSLContext
        do {
            sslContext = try HTTP2Endpoint.makeSSLContext(tls)
        } catch {
            logger.error("the TLS settings are unusable; no server will be trusted", metadata: ["error": "\(error)"])
            var empty = TLSConfiguration.makeClientConfiguration()
            empty.trustRoots = .certificates([])
            sslContext = (try? HTTP2Endpoint.makeSSLContext(empty))!
        }
        self.connections = FCMSendConnections(
            count: configuration.connections,
            streamsPerConnection: configuration.maxConcurrentStreamsPerConnection,
            configuration: HTTP2Endpoint.Configuration(
                origin: origin,
                sslContext: sslContext,
                connectTimeout: TimeAmount(configuration.connectTimeout),
                idleTimeout: .minutes(5)
            ),
            eventLoopGroup: eventLoopGroup
        )
        let tokenClient = HTTPClient(eventLoopGroup: eventLoopGroup.next(), configuration: httpConfiguration, backgroundActivityLogger: logger)
        self.tokenClient = tokenClient
        self.accessTokens = FCMAccessTokenProvider(refreshMargin: configuration.tokenRefreshMargin, now: now) {
            (account: FCMServiceAccount) async throws(FCMClientError) -> (value: String, expiresIn: Duration) in
            try await Self.requestAccessToken(for: account, client: tokenClient, configuration: configuration, now: now, logger: logger)
        }
        self.throttle = FCMProjectThrottle(configuration: configuration.throttle, now: now)
    }

    /// HTTP/2 connections to the send endpoint open now (the token endpoint's are not counted).
    package var openConnections: Int {
        self.connections.openConnections
    }

    /// Sends one message with the account's (cached) access token and returns FCM's parsed answer.
    ///
    /// Waits first while the project is paused or paced after QUOTA_EXCEEDED; records a new
    /// QUOTA_EXCEEDED in the throttle. A 401 without an FcmError detail (the access token was not
    /// accepted) drops the token, fetches a new one and sends once more; a second 401 is returned.
    /// Throws only when no FCM answer arrived.
    package func send(_ request: FCMRequest, account: FCMServiceAccount) async throws(FCMClientError) -> FCMResponse {
        try await self.send(request, account: account, refreshOn401: true)
    }

    /// `send` without a task, for callers that send many messages from callbacks (the
    /// fcm-sender): `completion` is called once, usually on the connection's event loop.
    ///
    /// It takes the path that needs no waiting: the project is not paused or paced, the
    /// account's access token is cached, a stream is free. When the send needs to wait (a token
    /// to fetch, a paused project, a 401, a request to send again), `completion` gets
    /// `.needsAsync` and the caller continues it with `send(continuing:)` from a task it owns;
    /// the async `send`'s rules apply from there.
    package func send(_ request: FCMRequest, account: FCMServiceAccount, completion: @escaping @Sendable (CallbackResult) -> Void) {
        guard !self.isShutDown.load(ordering: .relaxed) else { return completion(.failed(Self.shutDownError)) }
        let needsAsync: @Sendable (_ refreshOn401: Bool) -> Void = { refreshOn401 in
            completion(.needsAsync(PendingSend(request: request, account: account, refreshOn401: refreshOn401)))
        }
        guard case .open = self.throttle.status(project: request.projectId), let token = self.accessTokens.usableToken(accountID: account.id) else {
            return needsAsync(true)
        }
        guard let (index, endpoint) = self.connections.tryAcquire() else { return needsAsync(true) }
        let now = self.now
        let logger = self.logger
        endpoint.send(
            self.httpRequest(Self.body(of: request), projectId: request.projectId, token: token, stillWanted: request.stillWanted),
            deadline: .now() + TimeAmount(self.configuration.requestTimeout)
        ) {
            [self] result in
            self.connections.release(index)
            switch result {
            case .success(let answer):
                let response = FCMResponse(
                    status: answer.status, body: answer.body.readableBytesView, retryAfterHeader: answer.headers.first(name: HTTPHeaderName.retryAfter),
                    now: now())
                if response.status == 401, response.errorCode == nil {
                    // As `send`: a new token and one more try, no more.
                    logger.debug("FCM refused the access token; refreshing once", metadata: ["fcm.account": "\(account.id)"])
                    self.accessTokens.invalidate(accountID: account.id, token: token)
                    return needsAsync(false)
                }
                self.noteQuota(response, projectId: request.projectId)
                completion(.answered(response))
            case .failure(let error):
                let failure = FCMClientError.transport(error, endpoint: "send", requestWritten: true)
                // Never reached FCM (its connection was closing): `send` tries it again.
                if failure.code == .connectionClosed, !failure.mayHaveBeenDelivered { return needsAsync(true) }
                completion(.failed(failure))
            }
        }
    }

    /// What the callback `send` ends with.
    package enum CallbackResult: Sendable {
        /// FCM's parsed answer, whatever its status.
        case answered(FCMResponse)
        /// No answer came, and none will (the async `send` would throw this too).
        case failed(FCMClientError)
        /// The send must wait for something: continue it with `send(continuing:)`.
        case needsAsync(PendingSend)
    }

    /// A send the callback `send` leaves to the async one.
    package struct PendingSend: Sendable {
        fileprivate var request: FCMRequest
        fileprivate var account: FCMServiceAccount
        /// False once FCM refused the token this send used: the async `send` fetches a new one
        /// and does not refresh a second time.
        fileprivate var refreshOn401: Bool
    }

    /// Finishes a send the callback `send` could not, with the async `send`'s rules. Throws only
    /// when no FCM answer arrived.
    package func send(continuing pending: PendingSend) async throws(FCMClientError) -> FCMResponse {
        try await self.send(pending.request, account: pending.account, refreshOn401: pending.refreshOn401)
    }

    private static let shutDownError = FCMClientError(.shutDown, "the client is shut down", isRetriable: false)

    private func send(_ request: FCMRequest, account: FCMServiceAccount, refreshOn401: Bool) async throws(FCMClientError) -> FCMResponse {
        guard !self.isShutDown.load(ordering: .relaxed) else { throw Self.shutDownError }
        try await self.throttle.acquire(project: request.projectId)

        let body = Self.body(of: request)
        var token = try await self.accessTokens.token(for: account)
        var response = try await self.post(body, projectId: request.projectId, token: token, stillWanted: request.stillWanted)
        if refreshOn401, response.status == 401, response.errorCode == nil {
            self.logger.debug("FCM refused the access token; refreshing once", metadata: ["fcm.account": "\(account.id)"])
            self.accessTokens.invalidate(accountID: account.id, token: token)
            token = try await self.accessTokens.token(for: account)
            response = try await self.post(body, projectId: request.projectId, token: token, stillWanted: request.stillWanted)
        }
        self.noteQuota(response, projectId: request.projectId)
        return response
    }

    /// A QUOTA_EXCEEDED answer for the project's quota pauses the project in the throttle; one for
    /// a device's quota (`deviceQuotaExceeded`) pauses nothing.
    private func noteQuota(_ response: FCMResponse, projectId: String) {
        guard case .quotaExceeded(let after) = response.outcome else { return }
        // Logged once per pause, not once for each request that was in flight when it began.
        guard self.throttle.recordQuotaExceeded(project: projectId, after: after) else { return }
        self.logger.info(
            "FCM quota exceeded; pausing the project",
            metadata: ["fcm.project": "\(projectId)", "fcm.pause_seconds": "\(after.components.seconds)"]
        )
    }

    /// The request body: the planned message inside `{"message": ...}`.
    private static func body(of request: FCMRequest) -> ByteBuffer {
        var body = ByteBuffer()
        body.reserveCapacity(request.message.count + 12)
        body.writeString(#"{"message":"#)
        body.writeBytes(request.message)
        body.writeString("}")
        return body
    }

    private func httpRequest(_ body: ByteBuffer, projectId: String, token: FCMAccessToken, stillWanted: (@Sendable () -> Bool)?) -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.add(name: HTTPHeaderName.contentType, value: "application/json; charset=UTF-8")
        headers.add(name: HTTPHeaderName.authorization, value: token.authorization)
        return HTTP2Request(path: "\(self.pathPrefix)/v1/projects/\(projectId)/messages:send", headers: headers, body: body, stillWanted: stillWanted)
    }

    /// Closes every connection. Sends after this throw `.shutDown`.
    package func shutdown() async throws {
        guard !self.isShutDown.exchange(true, ordering: .relaxed) else { return }
        var firstError: (any Error)?
        do { try await self.connections.shutdown() } catch { firstError = error }
        do { try await self.tokenClient.shutdown() } catch { firstError = firstError ?? error }
        if let firstError { throw firstError }
    }

    // MARK: HTTP

    private func post(_ body: ByteBuffer, projectId: String, token: FCMAccessToken, stillWanted: (@Sendable () -> Bool)?) async throws(FCMClientError)
        -> FCMResponse
    {
        let request = self.httpRequest(body, projectId: projectId, token: token, stillWanted: stillWanted)
        let timeout = TimeAmount(self.configuration.requestTimeout)
        let now = self.now
        var attempt = 1
        while true {
            do throws(FCMClientError) {
                return try await self.connections.withEndpoint { (endpoint: HTTP2Endpoint) async throws(FCMClientError) -> FCMResponse in
                    do {
                        let response = try await endpoint.send(request, deadline: .now() + timeout)
                        return FCMResponse(
                            status: response.status,
                            body: response.body.readableBytesView,
                            retryAfterHeader: response.headers.first(name: HTTPHeaderName.retryAfter),
                            now: now()
                        )
                    } catch {
                        throw FCMClientError.transport(error, endpoint: "send", requestWritten: true)
                    }
                }
            } catch {
                // A request that provably never reached FCM (refused, above the GOAWAY's
                // last-stream-id, never written) goes again, on a new connection if its own is
                // closing, a few times before giving up.
                guard error.code == .connectionClosed, !error.mayHaveBeenDelivered, attempt < Self.unsentAttempts, !Task.isCancelled else {
                    throw error
                }
                attempt += 1
            }
        }
    }

    /// How often `post` tries a request that was never written because its connection was closing.
    static let unsentAttempts = 3

    /// POSTs the account's signed assertion to its token endpoint (or `tokenURLOverride`).
    private static func requestAccessToken(
        for account: FCMServiceAccount,
        client: HTTPClient,
        configuration: FCMClientConfiguration,
        now: @Sendable () -> Date,
        logger: Logger
    ) async throws(FCMClientError) -> (value: String, expiresIn: Duration) {
        let assertion = try account.assertion(now: now())
        let url = configuration.tokenURLOverride ?? account.tokenURI
        var request = HTTPClientRequest(url: url)
        request.method = .POST
        request.headers.add(name: HTTPHeaderName.contentType, value: "application/x-www-form-urlencoded")
        request.body = .bytes(ByteBuffer(string: "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=\(assertion)"))
        let deadline = NIODeadline.now() + TimeAmount(configuration.requestTimeout)
        logger.debug("requesting an FCM access token", metadata: ["fcm.account": "\(account.id)"])
        let status: Int
        let body: ByteBuffer
        do {
            let response = try await client.execute(request, deadline: deadline, logger: logger)
            status = Int(response.status.code)
            body = try await response.body.collect(upTo: 1 << 16)
        } catch {
            throw FCMClientError.transport(error, endpoint: "token endpoint", requestWritten: false)
        }
        let object = (try? JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any]
        if status == 200, let token = object?["access_token"] as? String, !token.isEmpty {
            let expiresIn = (object?["expires_in"] as? NSNumber)?.doubleValue ?? 3600
            logger.debug("got an FCM access token", metadata: ["fcm.account": "\(account.id)", "fcm.expires_in": "\(Int(expiresIn))"])
            return (token, .timeInterval(expiresIn))
        }
        let name = object?["error"] as? String ?? "no error name"
        let description = (object?["error_description"] as? String).map { ": \(String($0.prefix(200)))" } ?? ""
        throw FCMClientError(
            .tokenEndpointFailed,
            "service account \(account.id): token endpoint answered \(status) \(name)\(description)",
            isRetriable: status == 429 || status >= 500
        )
    }

    private static func tlsConfiguration(_ configuration: FCMClientConfiguration, logger: Logger) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let pem = configuration.trustedCAPEM {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            } catch {
                logger.error("trustedCAPEM holds no usable certificate; no server will be trusted")
                tls.trustRoots = .certificates([])
            }
        }
        return tls
    }

    /// The token endpoint's client (a request an hour per service account: AsyncHTTPClient).
    private static func httpConfiguration(_ configuration: FCMClientConfiguration, tls: TLSConfiguration) -> HTTPClient.Configuration {
        var http = HTTPClient.Configuration(
            tlsConfiguration: tls,
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: TimeAmount(configuration.connectTimeout)),
            decompression: .disabled
        )
        http.httpVersion = .automatic
        // Fail fast on refused connections: the caller's retry policy owns the back-off.
        http.connectionPool.retryConnectionEstablishment = false
        http.connectionPool.idleTimeout = .minutes(5)
        return http
    }
}
