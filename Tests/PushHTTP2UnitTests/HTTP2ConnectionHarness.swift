import NIOCore
import NIOEmbedded
import NIOHPACK
import NIOHTTP2
import Synchronization
import Testing

@testable import PushHTTP2

/// One client connection and the server it talks to, on embedded channels sharing one embedded
/// event loop: no socket, no TLS, and time moves only when a test says so.
///
/// The client's pipeline is the endpoint's own after TLS (`HTTP2Endpoint.addHTTP2Handlers`),
/// wired to an `HTTP2ClientConnection` as `HTTP2Endpoint.handshake` wires it. The server is
/// swift-nio-http2's own `NIOHTTP2Handler` in server mode, so every frame crosses a real HTTP/2
/// encoder and decoder and the client's handler sees the same frames and stream events as
/// against APNs or FCM.
final class HTTP2ConnectionHarness {
    static let authority = "push.example"

    let loop = EmbeddedEventLoop()
    let client: EmbeddedChannel
    let server: EmbeddedChannel
    /// What the project's handler wrote, before `NIOHTTP2Handler` (which would hold streams above
    /// the server's limit itself, hiding whether the connection did).
    let written = FrameLog()
    /// What the server read from the wire.
    let received = ServerFrames()
    let frames: HTTP2ConnectionHandler
    let connection: HTTP2ClientConnection
    private let requeues = Requeues()

    /// Connects the two sides and waits for the server's SETTINGS, as the endpoint does before a
    /// request may use the connection.
    init(serverMaxConcurrentStreams: Int = 100, idleTimeout: TimeAmount = .zero) throws {
        self.client = EmbeddedChannel(loop: self.loop)
        let pipeline = self.client.pipeline.syncOperations
        try HTTP2Endpoint.addHTTP2Handlers(to: pipeline, eventLoop: self.loop)
        self.frames = try pipeline.handler(type: HTTP2ConnectionHandler.self)
        try pipeline.addHandler(self.written, position: .before(self.frames))

        self.server = EmbeddedChannel(loop: self.loop)
        var serverConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
        serverConfiguration.initialSettings = [
            HTTP2Setting(parameter: .maxConcurrentStreams, value: serverMaxConcurrentStreams),
            HTTP2Setting(parameter: .maxHeaderListSize, value: HPACKDecoder.defaultMaxHeaderListSize),
        ]
        try self.server.pipeline.syncOperations.addHandler(NIOHTTP2Handler(mode: .server, connectionConfiguration: serverConfiguration))
        try self.server.pipeline.syncOperations.addHandler(self.received)

        let address = try SocketAddress(ipAddress: "127.0.0.1", port: 443)
        try self.client.connect(to: address).wait()
        try self.server.connect(to: address).wait()
        try Self.exchangeBytes(loop: self.loop, client: self.client, server: self.server)
        try self.frames.readyFuture.wait()

        let requeues = self.requeues
        self.connection = HTTP2ClientConnection(
            channel: self.client,
            frames: self.frames,
            authority: Self.authority,
            maxStreams: self.frames.maxConcurrentStreams,
            idleTimeout: idleTimeout,
            requeue: { requeues.waiting.append($0) }
        )
        self.frames.connection = self.connection
        let connection = self.connection
        self.client.closeFuture.assumeIsolated().whenComplete { _ in connection.closed() }
    }

    /// Requests the connection handed back to its endpoint, unsent.
    var requeued: [HTTP2ClientConnection.Waiting] { self.requeues.waiting }

    /// Moves bytes both ways, running the loop's due tasks (the coalesced flush) in between,
    /// until neither side has anything more to say.
    func exchangeBytes() throws {
        try Self.exchangeBytes(loop: self.loop, client: self.client, server: self.server)
    }

    private static func exchangeBytes(loop: EmbeddedEventLoop, client: EmbeddedChannel, server: EmbeddedChannel) throws {
        var moved: Bool
        repeat {
            moved = false
            loop.run()
            while let bytes = try client.readOutbound(as: ByteBuffer.self) {
                moved = true
                if server.isActive { try server.writeInbound(bytes) }
            }
            while let bytes = try server.readOutbound(as: ByteBuffer.self) {
                moved = true
                if client.isActive { try client.writeInbound(bytes) }
            }
        } while moved
    }

    /// Sends a request on the connection as the endpoint does, then lets the frames reach the
    /// server.
    @discardableResult
    func send(_ request: HTTP2Request = HTTP2Request(path: "/send", body: ByteBuffer(string: "{}")), deadline: NIODeadline = .distantFuture) throws
        -> Answer
    {
        let promise = self.loop.makePromise(of: HTTP2Response.self)
        let answer = Answer(promise.futureResult)
        self.connection.send(request, deadline: deadline, promise: promise)
        try self.exchangeBytes()
        return answer
    }

    /// Stream ids of the HEADERS the client's handler wrote, in order.
    var openedStreams: [HTTP2StreamID] {
        self.written.frames.compactMap { frame in
            if case .headers = frame.payload { return frame.streamID }
            return nil
        }
    }

    /// The server answers on `stream`: HEADERS, then the body in one DATA frame (which
    /// swift-nio-http2 splits at the maximum frame size) if there is one.
    func answer(_ stream: HTTP2StreamID, status: Int = 200, headers: [(String, String)] = [], body: ByteBuffer? = nil) throws {
        let block = HPACKHeaders([(":status", String(status))] + headers)
        self.serverWrites(HTTP2Frame(streamID: stream, payload: .headers(.init(headers: block, endStream: body == nil))))
        if let body {
            self.serverWrites(HTTP2Frame(streamID: stream, payload: .data(.init(data: .byteBuffer(body), endStream: true))))
        }
        try self.exchangeBytes()
    }

    /// The server sends a frame of its own (SETTINGS, GOAWAY, RST_STREAM).
    func serverSends(_ payload: HTTP2Frame.FramePayload, on stream: HTTP2StreamID = .rootStream) throws {
        self.serverWrites(HTTP2Frame(streamID: stream, payload: payload))
        try self.exchangeBytes()
    }

    /// Queues a frame on the server without moving any bytes. Not `writeOutbound`: it waits for
    /// the write to complete, and swift-nio-http2 holds DATA while the client's window is closed,
    /// so a test of flow control would wait forever.
    func serverWrites(_ frame: HTTP2Frame) {
        self.server.writeAndFlush(frame, promise: nil)
    }

    /// Closes whatever is still open and completes every promise (an unfulfilled promise and an
    /// open embedded channel are assertion failures in debug builds), then stops the loop.
    func finish() {
        for waiting in self.requeues.waiting {
            waiting.promise.fail(HTTP2ClientError(.shutDown, "test over", mayHaveBeenDelivered: false))
        }
        self.requeues.waiting = []
        if self.client.isActive { self.client.close(promise: nil) }
        if self.server.isActive { self.server.close(promise: nil) }
        self.loop.run()
        try? self.loop.syncShutdownGracefully()
    }
}

/// The outcome of one request, read by the test once the loop has run.
final class Answer {
    private(set) var result: Result<HTTP2Response, any Error>?

    init(_ future: EventLoopFuture<HTTP2Response>) {
        future.assumeIsolated().whenComplete { self.result = $0 }
    }

    var isPending: Bool { self.result == nil }

    var response: HTTP2Response? { try? self.result?.get() }

    var error: HTTP2ClientError? {
        guard case .failure(let error)? = self.result else { return nil }
        return error as? HTTP2ClientError
    }
}

/// Records the frames the client's handler writes and passes them on.
final class FrameLog: ChannelOutboundHandler {
    typealias OutboundIn = HTTP2Frame
    typealias OutboundOut = HTTP2Frame

    private(set) var frames: [HTTP2Frame] = []

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        self.frames.append(self.unwrapOutboundIn(data))
        context.write(data, promise: promise)
    }
}

/// The server's end of the pipeline: the frames it read and any error on its side.
final class ServerFrames: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    private(set) var frames: [HTTP2Frame] = []
    private(set) var errors: [any Error] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.frames.append(self.unwrapInboundIn(data))
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.errors.append(error)
    }

    /// The request HEADERS the server read, by stream.
    var requestHeaders: [HTTP2StreamID: HPACKHeaders] {
        var byStream: [HTTP2StreamID: HPACKHeaders] = [:]
        for frame in self.frames {
            if case .headers(let headers) = frame.payload { byStream[frame.streamID] = headers.headers }
        }
        return byStream
    }
}

private final class Requeues {
    var waiting: [HTTP2ClientConnection.Waiting] = []
}

/// A caller's "still wanted?" answer that the test changes while the request waits.
final class Wanted: Sendable {
    private let value = Atomic(true)
    var isWanted: Bool {
        get { self.value.load(ordering: .relaxed) }
        set { self.value.store(newValue, ordering: .relaxed) }
    }
    /// How often the request was asked.
    private let asked = Atomic(0)
    var timesAsked: Int { self.asked.load(ordering: .relaxed) }

    func ask() -> Bool {
        self.asked.add(1, ordering: .relaxed)
        return self.isWanted
    }
}
