import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import NIOTLS

/// One HTTP/2 connection over TLS: opens streams for requests, and knows whether it may take
/// more (not after the server's GOAWAY, nor once retired).
///
/// It never opens more streams than the server's `MAX_CONCURRENT_STREAMS`: requests above it
/// wait here, unsent. When the connection stops taking streams (GOAWAY, retired, closed), the
/// waiting requests go back to the endpoint (`requeue`), which sends them on another connection:
/// they never reached this server, so that cannot duplicate them.
///
/// Confined to its channel's event loop: every method runs there.
final class HTTP2ClientConnection {
    struct Waiting {
        var request: HTTP2Request
        var deadline: NIODeadline
        var promise: EventLoopPromise<HTTP2Response>
    }

    let channel: any Channel
    private let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    private let authority: String
    private let idleTimeout: TimeAmount
    private let requeue: (Waiting) -> Void
    /// Streams open on the wire (requests sent, answers not yet complete).
    private var activeStreams = 0
    private var maxStreams: Int
    private var waiting = CircularBuffer<Waiting>()
    /// Set by the server's GOAWAY: streams above it were not processed.
    private(set) var goAwayLastStreamID: HTTP2StreamID?
    private var retired = false
    private var idleTimer: Scheduled<Void>?

    init(
        channel: any Channel,
        multiplexer: NIOHTTP2Handler.StreamMultiplexer,
        authority: String,
        maxStreams: Int,
        idleTimeout: TimeAmount,
        requeue: @escaping (Waiting) -> Void
    ) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.authority = authority
        self.maxStreams = max(1, maxStreams)
        self.idleTimeout = idleTimeout
        self.requeue = requeue
    }

    /// New requests may go on this connection.
    var isUsable: Bool { self.channel.isActive && self.goAwayLastStreamID == nil && !self.retired }

    /// Sends `request` now, or once a stream is free; the answer (or why none came) completes
    /// `promise`.
    func send(_ request: HTTP2Request, deadline: NIODeadline, promise: EventLoopPromise<HTTP2Response>) {
        self.channel.eventLoop.preconditionInEventLoop()
        self.idleTimer?.cancel()
        self.idleTimer = nil
        let waiting = Waiting(request: request, deadline: deadline, promise: promise)
        if self.activeStreams < self.maxStreams && self.waiting.isEmpty {
            self.open(waiting)
        } else {
            self.waiting.append(waiting)
        }
    }

    /// The server's SETTINGS changed its stream limit (APNs raises it after the first accepted
    /// request of a token-auth connection).
    func updateMaxStreams(_ value: Int) {
        self.maxStreams = max(1, value)
        self.openWaiting()
    }

    /// The server sent GOAWAY: no new streams; close once the ones it processes are answered.
    func receivedGoAway(lastStreamID: HTTP2StreamID) {
        self.goAwayLastStreamID = min(lastStreamID, self.goAwayLastStreamID ?? lastStreamID)
        self.stopTakingStreams()
    }

    /// No new streams; closes once the open ones are answered.
    func retire() {
        self.retired = true
        self.stopTakingStreams()
    }

    /// The channel closed: requests still waiting go elsewhere.
    func closed() {
        self.idleTimer?.cancel()
        self.stopTakingStreams()
    }

    private func open(_ waiting: Waiting) {
        guard NIODeadline.now() < waiting.deadline else {
            // It waited for a stream past its deadline: never sent.
            waiting.promise.fail(HTTP2ClientError(.timeout, "no stream before the deadline", mayHaveBeenDelivered: false))
            return
        }
        self.activeStreams += 1
        let (request, deadline, promise) = (waiting.request, waiting.deadline, waiting.promise)
        let authority = self.authority
        let loopBound = NIOLoopBound(self, eventLoop: self.channel.eventLoop)
        promise.futureResult.whenComplete { _ in loopBound.value.streamEnded() }
        let created = self.channel.eventLoop.makePromise(of: (any Channel).self)
        created.futureResult.whenFailure { error in
            promise.fail(HTTP2ClientError(.notSent, "could not open a stream: \(error)", mayHaveBeenDelivered: false))
        }
        self.multiplexer.createStreamChannel(promise: created) { stream in
            let handler = HTTP2ExchangeHandler(
                request: request,
                authority: authority,
                deadline: deadline,
                promise: promise,
                goAway: { loopBound.value.goAwayLastStreamID }
            )
            return stream.eventLoop.makeCompletedFuture {
                try stream.pipeline.syncOperations.addHandler(handler)
            }
        }
    }

    private func openWaiting() {
        while self.isUsable, self.activeStreams < self.maxStreams, let next = self.waiting.popFirst() {
            self.open(next)
        }
    }

    private func streamEnded() {
        self.activeStreams -= 1
        self.openWaiting()
        self.closeIfDrained()
        if self.activeStreams == 0, self.waiting.isEmpty, self.isUsable, self.idleTimeout > .zero {
            let loopBound = NIOLoopBound(self, eventLoop: self.channel.eventLoop)
            self.idleTimer = self.channel.eventLoop.assumeIsolated().scheduleTask(in: self.idleTimeout) {
                loopBound.value.retire()
            }
        }
    }

    private func stopTakingStreams() {
        while let next = self.waiting.popFirst() {
            self.requeue(next)
        }
        self.closeIfDrained()
    }

    private func closeIfDrained() {
        guard self.activeStreams == 0, self.waiting.isEmpty, !self.isUsable, self.channel.isActive else { return }
        self.channel.close(promise: nil)
    }
}

/// Sits after `NIOHTTP2Handler` on a connection: sees the root stream's frames (SETTINGS,
/// GOAWAY), reports the first SETTINGS (the connection is ready: the server's stream limit is
/// known) and GOAWAY to the connection.
final class HTTP2ConnectionEventsHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame

    private var ready: EventLoopPromise<Void>?
    /// Succeeds with the server's first SETTINGS; fails if the connection fails before.
    let readyFuture: EventLoopFuture<Void>
    var connection: HTTP2ClientConnection?
    /// The server's MAX_CONCURRENT_STREAMS (100 until it says otherwise: RFC 9113 recommends no
    /// less, and swift-nio-http2 assumes the same).
    private(set) var maxConcurrentStreams = 100

    init(eventLoop: any EventLoop) {
        let ready = eventLoop.makePromise(of: Void.self)
        self.ready = ready
        self.readyFuture = ready.futureResult
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
            let name = negotiated ?? "none"
            self.failReady(HTTP2ClientError(.tlsFailed, "the server did not negotiate HTTP/2 (ALPN: \(name))", mayHaveBeenDelivered: false))
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = self.unwrapInboundIn(data)
        switch frame.payload {
        case .settings(.settings(let settings)):
            if let limit = settings.last(where: { $0.parameter == .maxConcurrentStreams }) {
                self.maxConcurrentStreams = limit.value
                self.connection?.updateMaxStreams(limit.value)
            }
            if let ready = self.ready {
                self.ready = nil
                ready.succeed(())
            }
        case .goAway(let lastStreamID, _, _):
            self.connection?.receivedGoAway(lastStreamID: lastStreamID)
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if self.ready != nil {
            let isTLS = error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError
            self.failReady(HTTP2ClientError(isTLS ? .tlsFailed : .connectFailed, "\(error)", mayHaveBeenDelivered: false))
            context.close(promise: nil)
            return
        }
        // A stream's error is its stream's business (its channel sees it too).
        if error is NIOHTTP2Errors.StreamError { return }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.failReady(HTTP2ClientError(.connectFailed, "the server closed the connection before its SETTINGS", mayHaveBeenDelivered: false))
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.failReady(HTTP2ClientError(.connectFailed, "the connection closed before the server's SETTINGS", mayHaveBeenDelivered: false))
    }

    func failReady(_ error: HTTP2ClientError) {
        guard let ready = self.ready else { return }
        self.ready = nil
        ready.fail(error)
    }
}

/// Sits between TLS and `NIOHTTP2Handler`: turns the flushes of one event-loop tick into one.
///
/// Every request's stream flushes its HEADERS and DATA when it opens; without this each flush
/// reached TLS on its own (one TLS record and one `write` system call per request, about a
/// sixth of the sender's CPU at 8,000 requests a second). Now the first flush schedules one
/// after the tasks already queued on the event loop, and the flushes until then join it:
/// requests submitted together leave together, at most one task later.
final class HTTP2FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = Any

    private var flushScheduled = false

    func flush(context: ChannelHandlerContext) {
        guard !self.flushScheduled else { return }
        self.flushScheduled = true
        let loopBound = NIOLoopBound((self, context), eventLoop: context.eventLoop)
        context.eventLoop.execute {
            let (handler, context) = loopBound.value
            handler.flushScheduled = false
            context.flush()
        }
    }
}
