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
    private let frames: HTTP2ConnectionHandler
    private let authority: String
    private let idleTimeout: TimeAmount
    private let requeue: (Waiting) -> Void
    /// Streams open on the wire (requests sent, answers not yet complete).
    private var activeStreams = 0
    private var maxStreams: Int
    private var waiting = CircularBuffer<Waiting>()
    private var retired = false
    private var idleTimer: Scheduled<Void>?

    init(
        channel: any Channel,
        frames: HTTP2ConnectionHandler,
        authority: String,
        maxStreams: Int,
        idleTimeout: TimeAmount,
        requeue: @escaping (Waiting) -> Void
    ) {
        self.channel = channel
        self.frames = frames
        self.authority = authority
        self.maxStreams = max(1, maxStreams)
        self.idleTimeout = idleTimeout
        self.requeue = requeue
    }

    /// New requests may go on this connection.
    var isUsable: Bool { self.channel.isActive && self.frames.goAwayLastStreamID == nil && !self.retired && !self.frames.streamIDsExhausted }

    /// Sends `request` now, or once a stream is free; the answer (or why none came) completes
    /// `promise`.
    func send(_ request: HTTP2Request, deadline: NIODeadline, promise: EventLoopPromise<HTTP2Response>) {
        self.channel.eventLoop.preconditionInEventLoop()
        self.idleTimer?.cancel()
        self.idleTimer = nil
        let waiting = Waiting(request: request, deadline: deadline, promise: promise)
        // A connection that takes no new streams (GOAWAY, retired, closed) hands the request
        // back unsent: a stream opened after GOAWAY would make swift-nio-http2 close the whole
        // connection, and one queued here would wait for a stream that never comes.
        guard self.isUsable else {
            self.requeue(waiting)
            return
        }
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

    /// The server sent GOAWAY (its frames handler keeps the last-stream-id): no new streams;
    /// close once the ones it processes are answered.
    func receivedGoAway() {
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
        if let stillWanted = waiting.request.stillWanted, !stillWanted() {
            waiting.promise.fail(HTTP2ClientError(.withdrawn, "withdrawn by the caller before it was sent", mayHaveBeenDelivered: false))
            return
        }
        self.activeStreams += 1
        let exchange = HTTP2Exchange(request: waiting.request, deadline: waiting.deadline, promise: waiting.promise)
        let loopBound = NIOLoopBound(self, eventLoop: self.channel.eventLoop)
        exchange.promise.futureResult.whenComplete { _ in loopBound.value.streamEnded() }
        self.frames.start(exchange, authority: self.authority)
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

/// Sits after `NIOHTTP2Handler` (no stream multiplexer): writes each request's frames on a
/// stream id of its own and routes the answers' frames to their exchanges by stream id. Also
/// reports the first SETTINGS (the connection is ready: the server's stream limit is known),
/// later SETTINGS and GOAWAY to the connection.
///
/// swift-nio-http2's stream multiplexer gives every stream a child channel with its own pipeline
/// and promises; at thousands of requests a second that was about 30 % of a sender's CPU
/// (docs/benchmarks.md). A table of exchanges does the same work for request-answer streams.
///
/// Flow control: the client advertises a stream window larger than any answer it reads
/// (`initialStreamWindow` above `HTTP2Exchange.maximumBodyBytes`), so streams never need a
/// WINDOW_UPDATE, and keeps the connection window open itself.
final class HTTP2ConnectionHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    /// SETTINGS_INITIAL_WINDOW_SIZE the client advertises: every answer it accepts fits.
    static let initialStreamWindow = 2 << 20
    /// The connection receive window the client keeps open (RFC 9113 starts it at 65,535),
    /// topped up by what was received each time a quarter of it is used: about one small
    /// WINDOW_UPDATE per 4,000 FCM answers, and every long run exercises it.
    static let connectionWindow = 1 << 20

    private var ready: EventLoopPromise<Void>?
    /// Succeeds with the server's first SETTINGS; fails if the connection fails before.
    let readyFuture: EventLoopFuture<Void>
    var connection: HTTP2ClientConnection?
    /// The server's MAX_CONCURRENT_STREAMS (100 until it says otherwise: RFC 9113 recommends no
    /// less, and swift-nio-http2 assumes the same).
    private(set) var maxConcurrentStreams = 100

    private var context: ChannelHandlerContext?
    private var exchanges: [HTTP2StreamID: HTTP2Exchange] = [:]
    private var deadlineSweep: RepeatedTask?
    private var nextStreamID = HTTP2StreamID(1)
    /// DATA bytes received since the connection window was last topped up.
    private var consumed = 0
    /// Connection window to give back at the end of this read.
    private var windowIncrement = 0
    /// Set by the server's GOAWAY (the lowest, if several): streams above it were not processed.
    private(set) var goAwayLastStreamID: HTTP2StreamID?

    init(eventLoop: any EventLoop) {
        let ready = eventLoop.makePromise(of: Void.self)
        self.ready = ready
        self.readyFuture = ready.futureResult
    }

    /// Client stream ids are odd and below 2^31; a connection near the end takes no new streams.
    var streamIDsExhausted: Bool { Int(self.nextStreamID) > Int(Int32.max) - 1024 }

    // MARK: requests

    /// Writes the exchange's HEADERS and DATA on the next stream id; the flush leaves with the
    /// others of this event-loop tick (`HTTP2FlushCoalescingHandler`).
    func start(_ exchange: HTTP2Exchange, authority: String) {
        guard let context = self.context, context.channel.isActive else {
            exchange.fail(HTTP2ClientError(.notSent, "the connection closed before the request was written", mayHaveBeenDelivered: false))
            return
        }
        let streamID = self.nextStreamID
        self.nextStreamID = streamID.advanced(by: 2)
        self.exchanges[streamID] = exchange
        let hasBody = exchange.request.body.readableBytes > 0
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenComplete { [self] result in
            switch result {
            case .success:
                exchange.headersWritten = true
            case .failure(let error):
                // swift-nio-http2 refused the stream (the connection was closing): never sent.
                self.exchanges[streamID] = nil
                exchange.fail(HTTP2ClientError(.notSent, "could not open a stream: \(error)", mayHaveBeenDelivered: false))
            }
        }
        let headers = HTTP2Frame.FramePayload.headers(.init(headers: exchange.requestHeaders(authority: authority), endStream: !hasBody))
        context.write(self.wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: headers)), promise: written)
        if hasBody {
            let data = HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(exchange.request.body), endStream: true))
            context.write(self.wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: data)), promise: nil)
        }
        context.flush()
        self.startDeadlineSweep(context: context)
    }

    /// How often open exchanges are checked against their deadlines: an unanswered request
    /// fails at most this long after its deadline.
    static let deadlineSweepInterval = TimeAmount.milliseconds(100)

    /// Deadlines are checked by one repeated task per connection while it has exchanges, not by
    /// a timer per request: scheduling and cancelling a timer per request (cancelling searches
    /// the event loop's whole timer heap, a thousand entries with 1,000 requests in flight) was
    /// about 4 % of a sender's CPU. A sweep looks at every open exchange ten times a second.
    private func startDeadlineSweep(context: ChannelHandlerContext) {
        guard self.deadlineSweep == nil else { return }
        let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
        self.deadlineSweep = context.eventLoop.scheduleRepeatedTask(
            initialDelay: Self.deadlineSweepInterval, delay: Self.deadlineSweepInterval
        ) { _ in
            loopBound.value.sweepDeadlines()
        }
    }

    private func stopDeadlineSweep() {
        self.deadlineSweep?.cancel()
        self.deadlineSweep = nil
    }

    private func sweepDeadlines() {
        guard !self.exchanges.isEmpty else {
            self.stopDeadlineSweep()
            return
        }
        let now = NIODeadline.now()
        let expired = self.exchanges.compactMap { streamID, exchange in exchange.deadline <= now ? streamID : nil }
        for streamID in expired { self.timedOut(streamID) }
    }

    /// No answer by the deadline: the stream is reset (CANCEL) and the caller told.
    private func timedOut(_ streamID: HTTP2StreamID) {
        guard let exchange = self.exchanges.removeValue(forKey: streamID) else { return }
        exchange.fail(HTTP2ClientError(.timeout, "no answer before the deadline", mayHaveBeenDelivered: exchange.headersWritten))
        guard let context = self.context, context.channel.isActive else { return }
        context.writeAndFlush(self.wrapOutboundOut(HTTP2Frame(streamID: streamID, payload: .rstStream(.cancel))), promise: nil)
    }

    // MARK: inbound

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        // Stream events come several per request; each cast from `Any` is a runtime lookup, so
        // the TLS event is looked for only until the connection is ready.
        if let closed = event as? StreamClosedEvent {
            self.streamClosed(closed, context: context)
        } else if self.ready != nil, case TLSUserEvent.handshakeCompleted(let negotiated) = event, negotiated != "h2" {
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
                // The connection window, 65,535 bytes at first, opened wide once.
                self.windowIncrement += Self.connectionWindow - 65_535
                ready.succeed(())
            }
        case .goAway(let lastStreamID, _, _):
            self.goAwayLastStreamID = min(lastStreamID, self.goAwayLastStreamID ?? lastStreamID)
            self.connection?.receivedGoAway()
        case .headers, .data:
            if let exchange = self.exchanges[frame.streamID], exchange.receive(frame.payload) {
                self.exchanges[frame.streamID] = nil
            }
            if case .data(let data) = frame.payload {
                self.consumed += data.data.readableBytes + (data.paddingBytes.map { $0 + 1 } ?? 0)
                if self.consumed >= Self.connectionWindow / 4 {
                    self.windowIncrement += self.consumed
                    self.consumed = 0
                }
            }
        default:
            break
        }
    }

    /// Window updates are written here, after the read. `NIOHTTP2Handler` passes a frame on
    /// and only then the events it caused (a stream closed by it); a write from `channelRead`
    /// makes it deliver those events at once, so the closing of the stream whose last frame was
    /// being read overtook that frame: written before the frame reached its exchange, the
    /// top-up lost one FCM answer each time (24 in 100,000 in the sender benchmark, each sent
    /// again after its deadline). The exchange now reads its frame first, and this write waits.
    func channelReadComplete(context: ChannelHandlerContext) {
        if self.windowIncrement > 0 {
            let increment = self.windowIncrement
            self.windowIncrement = 0
            context.writeAndFlush(self.wrapOutboundOut(HTTP2Frame(streamID: .rootStream, payload: .windowUpdate(windowSizeIncrement: increment))), promise: nil)
        }
        context.fireChannelReadComplete()
    }

    /// A stream closed: an exchange still waiting there lost its answer, or never reached the
    /// server. (`NIOHTTP2Handler` passes a frame on before the events it caused, so a GOAWAY is
    /// known here before the streams above its last-stream-id close.)
    private func streamClosed(_ event: StreamClosedEvent, context: ChannelHandlerContext) {
        guard let exchange = self.exchanges.removeValue(forKey: event.streamID) else { return }
        exchange.fail(exchange.lost(reason: event.reason, aboveGoAway: self.isAboveGoAway(event.streamID)))
    }

    private func isAboveGoAway(_ streamID: HTTP2StreamID) -> Bool {
        guard let lastStreamID = self.goAwayLastStreamID else { return false }
        return streamID > lastStreamID
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if self.ready != nil {
            let isTLS = error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError
            self.failReady(HTTP2ClientError(isTLS ? .tlsFailed : .connectFailed, "\(error)", mayHaveBeenDelivered: false))
            context.close(promise: nil)
            return
        }
        // An error about one stream (a frame for a stream already reset, say) is that stream's;
        // its StreamClosedEvent settles its exchange.
        if error is NIOHTTP2Errors.StreamError || error is NIOHTTP2Errors.NoSuchStream || error is NIOHTTP2Errors.StreamClosed { return }
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.failReady(HTTP2ClientError(.connectFailed, "the server closed the connection before its SETTINGS", mayHaveBeenDelivered: false))
        self.stopDeadlineSweep()
        let open = self.exchanges
        self.exchanges = [:]
        for exchange in open.values {
            exchange.fail(exchange.lostWithConnection("connection closed"))
        }
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.stopDeadlineSweep()
        self.context = nil
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
/// requests submitted together leave together, at most one task later. The provider
/// simulators put it in front of their answers for the same reason.
package final class HTTP2FlushCoalescingHandler: ChannelOutboundHandler, RemovableChannelHandler {
    package typealias OutboundIn = Any

    private var flushScheduled = false

    package init() {}

    package func flush(context: ChannelHandlerContext) {
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
