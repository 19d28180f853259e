import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import Synchronization

/// One long-lived HTTP/2 connection to one server, reopened when needed: the project's own
/// small HTTP/2 client, shared by the APNs and FCM clients.
///
/// - The connection opens on the first request (TCP, TLS with ALPN `h2`, then the server's first
///   SETTINGS, so its stream limit is known before a stream opens). Requests arriving meanwhile
///   wait for it. A failed open fails them all: the caller's backoff decides when to try again.
/// - Requests are multiplexed as streams; above the server's `MAX_CONCURRENT_STREAMS` the
///   connection (`HTTP2ClientConnection`) keeps the new requests unsent until a stream ends.
/// - After the server's GOAWAY the connection takes no new streams, drains the ones the server
///   processes, then closes; the next request opens a new connection meanwhile.
/// - A connection without streams for `idleTimeout` closes.
/// - Each answer is delivered as soon as its last frame is read, so a connection that closes
///   right after answering cannot lose an answer; a lost answer is reported with whether the
///   server may have acted on the request (`HTTP2ClientError`).
///
/// Its state lives on one event loop; requests reach it in batches: the first `send` that finds
/// none waiting schedules one hop, and the sends until it runs join that batch.
package final class HTTP2Endpoint: Sendable {
    package struct Configuration: Sendable {
        package var origin: HTTP2Origin
        /// From `makeSSLContext`, shared by every endpoint with the same TLS settings.
        package var sslContext: NIOSSLContext
        package var connectTimeout: TimeAmount
        /// A connection without streams this long closes (zero: never).
        package var idleTimeout: TimeAmount

        package init(origin: HTTP2Origin, sslContext: NIOSSLContext, connectTimeout: TimeAmount = .seconds(10), idleTimeout: TimeAmount = .minutes(5)) {
            self.origin = origin
            self.sslContext = sslContext
            self.connectTimeout = connectTimeout
            self.idleTimeout = idleTimeout
        }
    }

    /// A TLS context for `tls` that offers only `h2` in ALPN.
    package static func makeSSLContext(_ tls: TLSConfiguration) throws -> NIOSSLContext {
        var tls = tls
        tls.applicationProtocols = ["h2"]
        return try NIOSSLContext(configuration: tls)
    }

    private typealias Waiter = (Result<HTTP2ClientConnection, HTTP2ClientError>) -> Void

    private struct State {
        var current: HTTP2ClientConnection?
        var connecting = false
        var waiters: [Waiter] = []
        /// Every open connection, draining ones included, until it closes.
        var open: [ObjectIdentifier: HTTP2ClientConnection] = [:]
        var isShutDown = false
    }

    package let eventLoop: any EventLoop
    private let configuration: Configuration
    private let authority: String
    private let state: NIOLoopBoundBox<State>
    private let onConnectionOpened: @Sendable (any Channel) -> Void

    /// Requests handed over by `send`, waiting for the event loop (`drainSubmissions`).
    private struct Submission {
        var request: HTTP2Request
        var deadline: NIODeadline
        var promise: EventLoopPromise<HTTP2Response>
    }
    private struct Submissions {
        var waiting: [Submission] = []
        var scheduled = false
    }
    private let submissions = Mutex(Submissions())

    /// - Parameter onConnectionOpened: called on the event loop with each connection's channel
    ///   once it is ready (metrics and health watch its `closeFuture`).
    package init(
        configuration: Configuration,
        eventLoop: any EventLoop,
        onConnectionOpened: @escaping @Sendable (any Channel) -> Void = { _ in }
    ) {
        self.configuration = configuration
        let origin = configuration.origin
        let host = origin.host.contains(":") ? "[\(origin.host)]" : origin.host
        self.authority = origin.port == 443 ? host : "\(host):\(origin.port)"
        self.eventLoop = eventLoop
        self.state = NIOLoopBoundBox.makeBoxSendingValue(State(), eventLoop: eventLoop)
        self.onConnectionOpened = onConnectionOpened
    }

    /// Sends one request and returns the server's answer, whatever its status. Throws only when
    /// no answer came, saying whether the server may have acted on the request.
    package func send(_ request: HTTP2Request, deadline: NIODeadline) async throws(HTTP2ClientError) -> HTTP2Response {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<HTTP2Response, HTTP2ClientError>, Never>) in
            self.send(request, deadline: deadline) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// Sends one request and calls `completion` (on the event loop) with the server's answer,
    /// whatever its status, or the error saying why no answer came: `send` without a task and a
    /// continuation per request, for callers that already keep their own state.
    package func send(
        _ request: HTTP2Request, deadline: NIODeadline, completion: @escaping @Sendable (Result<HTTP2Response, HTTP2ClientError>) -> Void
    ) {
        if let malformation = request.malformation() {
            completion(.failure(HTTP2ClientError(.invalidRequest, malformation, mayHaveBeenDelivered: false)))
            return
        }
        self.submit(request, deadline: deadline).whenComplete { result in
            switch result {
            case .success(let response): completion(.success(response))
            case .failure(let error as HTTP2ClientError): completion(.failure(error))
            case .failure(let error): completion(.failure(HTTP2ClientError(.lostAnswer, "\(error)", mayHaveBeenDelivered: true)))
            }
        }
    }

    /// Hands the request to the event loop with the batch being formed (see `drainSubmissions`).
    private func submit(_ request: HTTP2Request, deadline: NIODeadline) -> EventLoopFuture<HTTP2Response> {
        // One promise per request, and one hop to the event loop per batch of requests: a hop
        // per request (a closure, a lock of the loop's queue and often a wake-up) cost more
        // than the batch's append under a lock.
        let promise = self.eventLoop.makePromise(of: HTTP2Response.self)
        let schedule = self.submissions.withLock { submissions in
            submissions.waiting.append(Submission(request: request, deadline: deadline, promise: promise))
            defer { submissions.scheduled = true }
            return !submissions.scheduled
        }
        if schedule { self.eventLoop.execute { self.drainSubmissions() } }
        return promise.futureResult
    }

    /// Takes no new requests; completes once every connection has answered its streams and closed.
    package func shutdown() -> EventLoopFuture<Void> {
        self.eventLoop.flatSubmit {
            var state = self.state.value
            state.isShutDown = true
            let waiters = state.waiters
            state.waiters = []
            let connections = Array(state.open.values)
            self.state.value = state
            for waiter in waiters {
                waiter(.failure(HTTP2ClientError(.shutDown, "the client is shut down", mayHaveBeenDelivered: false)))
            }
            for connection in connections { connection.retire() }
            return EventLoopFuture.andAllComplete(connections.map { $0.channel.closeFuture }, on: self.eventLoop)
        }
    }

    // MARK: on the event loop

    private func drainSubmissions() {
        let batch = self.submissions.withLock { submissions in
            submissions.scheduled = false
            defer { submissions.waiting = [] }
            return submissions.waiting
        }
        for submission in batch {
            self.sendOnLoop(submission.request, deadline: submission.deadline, promise: submission.promise)
        }
    }

    private func sendOnLoop(_ request: HTTP2Request, deadline: NIODeadline, promise: EventLoopPromise<HTTP2Response>) {
        self.withConnection { result in
            switch result {
            case .success(let connection):
                connection.send(request, deadline: deadline, promise: promise)
            case .failure(let error):
                promise.fail(error)
            }
        }
    }

    /// A request a connection took but never sent (it stopped taking streams first): it goes on
    /// another connection, with its own deadline.
    private func requeue(_ waiting: HTTP2ClientConnection.Waiting) {
        guard NIODeadline.now() < waiting.deadline else {
            waiting.promise.fail(HTTP2ClientError(.timeout, "no stream before the deadline", mayHaveBeenDelivered: false))
            return
        }
        self.withConnection { result in
            switch result {
            case .success(let connection):
                connection.send(waiting.request, deadline: waiting.deadline, promise: waiting.promise)
            case .failure(let error):
                waiting.promise.fail(error)
            }
        }
    }

    private func withConnection(_ body: @escaping Waiter) {
        if self.state.value.isShutDown {
            body(.failure(HTTP2ClientError(.shutDown, "the client is shut down", mayHaveBeenDelivered: false)))
            return
        }
        if let current = self.state.value.current, current.isUsable {
            body(.success(current))
            return
        }
        self.state.value.waiters.append(body)
        if !self.state.value.connecting {
            self.state.value.connecting = true
            self.connect()
        }
    }

    private func connected(_ result: Result<HTTP2ClientConnection, HTTP2ClientError>) {
        var state = self.state.value
        state.connecting = false
        let waiters = state.waiters
        state.waiters = []
        if case .success(let connection) = result {
            if state.isShutDown {
                connection.retire()
            } else {
                state.current = connection
            }
        }
        self.state.value = state
        for waiter in waiters {
            if state.isShutDown, case .success = result {
                waiter(.failure(HTTP2ClientError(.shutDown, "the client is shut down", mayHaveBeenDelivered: false)))
            } else {
                waiter(result)
            }
        }
    }

    private func connect() {
        let configuration = self.configuration
        let sslContext = configuration.sslContext
        let origin = configuration.origin
        // Hostname verification: a name is checked against the certificate's DNS names, an
        // address (no SNI) against its IP addresses.
        let isAddress = (try? SocketAddress(ipAddress: origin.host, port: 0)) != nil
        let serverHostname = isAddress ? nil : origin.host
        ClientBootstrap(group: self.eventLoop)
            .connectTimeout(configuration.connectTimeout)
            .channelOption(.tcpOption(.tcp_nodelay), value: 1)
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: serverHostname))
                    try Self.addHTTP2Handlers(to: sync, eventLoop: channel.eventLoop)
                }
            }
            .connect(host: origin.host, port: origin.port)
            .assumeIsolated()
            .whenComplete { result in
                switch result {
                case .failure(let error):
                    self.connected(.failure(Self.connectError(error)))
                case .success(let channel):
                    self.handshake(channel)
                }
            }
    }

    /// The handlers after TLS. Apart so that the unit tests build this same pipeline, settings
    /// included, on an embedded channel without TLS.
    static func addHTTP2Handlers(to sync: ChannelPipeline.SynchronousOperations, eventLoop: any EventLoop) throws {
        try sync.addHandler(HTTP2FlushCoalescingHandler())
        var settings = nioDefaultSettings
        settings.append(HTTP2Setting(parameter: .enablePush, value: 0))
        settings.append(HTTP2Setting(parameter: .initialWindowSize, value: HTTP2ConnectionHandler.initialStreamWindow))
        var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        connectionConfiguration.initialSettings = settings
        // The requests are the clients' own (names are constants, values are checked by
        // `HTTP2Request.malformation()` before sending) and only :status and a few headers of an
        // answer are read: swift-nio-http2's checks of every header block and content-length
        // cost about 4 % of a sender's CPU.
        connectionConfiguration.headerBlockValidation = .disabled
        connectionConfiguration.contentLengthValidation = .disabled
        try sync.addHandler(NIOHTTP2Handler(mode: .client, connectionConfiguration: connectionConfiguration))
        try sync.addHandler(HTTP2ConnectionHandler(eventLoop: eventLoop))
    }

    /// Waits for TLS and the server's first SETTINGS, within the connect timeout.
    private func handshake(_ channel: any Channel) {
        let handler: HTTP2ConnectionHandler
        do {
            handler = try channel.pipeline.syncOperations.handler(type: HTTP2ConnectionHandler.self)
        } catch {
            channel.close(promise: nil)
            self.connected(.failure(HTTP2ClientError(.connectFailed, "pipeline: \(error)", mayHaveBeenDelivered: false)))
            return
        }
        let timeout = channel.eventLoop.assumeIsolated().scheduleTask(in: self.configuration.connectTimeout) {
            handler.failReady(HTTP2ClientError(.tlsFailed, "no TLS handshake and SETTINGS within the connect timeout", mayHaveBeenDelivered: false))
            channel.close(promise: nil)
        }
        handler.readyFuture.assumeIsolated().whenComplete { result in
            timeout.cancel()
            switch result {
            case .failure(let error):
                channel.close(promise: nil)
                self.connected(.failure(error as? HTTP2ClientError ?? HTTP2ClientError(.connectFailed, "\(error)", mayHaveBeenDelivered: false)))
            case .success:
                let connection = HTTP2ClientConnection(
                    channel: channel,
                    frames: handler,
                    authority: self.authority,
                    maxStreams: handler.maxConcurrentStreams,
                    idleTimeout: self.configuration.idleTimeout,
                    requeue: { waiting in self.requeue(waiting) }
                )
                handler.connection = connection
                let id = ObjectIdentifier(connection)
                self.state.value.open[id] = connection
                channel.closeFuture.assumeIsolated().whenComplete { _ in
                    self.state.value.open[id] = nil
                    if self.state.value.current === connection { self.state.value.current = nil }
                    connection.closed()
                }
                self.onConnectionOpened(channel)
                self.connected(.success(connection))
            }
        }
    }

    private static func connectError(_ error: any Error) -> HTTP2ClientError {
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return HTTP2ClientError(.tlsFailed, "TLS failed: \(error)", mayHaveBeenDelivered: false)
        }
        if case ChannelError.connectTimeout = error {
            return HTTP2ClientError(.connectFailed, "connect timeout", mayHaveBeenDelivered: false)
        }
        return HTTP2ClientError(.connectFailed, "connect failed: \(error)", mayHaveBeenDelivered: false)
    }
}
