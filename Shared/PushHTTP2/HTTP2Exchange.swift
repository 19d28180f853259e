import NIOCore
import NIOHPACK
import NIOHTTP2

/// One request to send on a stream: the pseudo-headers come from `method`, `path` and the
/// endpoint's authority; `headers` are the regular ones (lower-case names).
public struct HTTP2Request: Sendable {
    public var method: String
    public var path: String
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(method: String = "POST", path: String, headers: HPACKHeaders = [:], body: ByteBuffer) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
    }
}

/// A whole answer: the final status, its headers and the body (trailers are ignored).
public struct HTTP2Response: Sendable {
    public var status: Int
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(status: Int, headers: HPACKHeaders, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why no answer came, and whether the server may have acted on the request anyway.
///
/// The client knows which requests never reached the server: a connection that could not be
/// opened, a stream the server refused (REFUSED_STREAM) or cut off with a GOAWAY whose
/// last-stream-id is below it, a request whose first frame was never written. Only those are
/// `.notSent`; every other lost answer may hide a delivered request.
public struct HTTP2ClientError: Error, Sendable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// TCP connect failed or timed out: nothing was sent.
        case connectFailed
        /// The TLS handshake failed, or the server did not speak h2: nothing was sent.
        case tlsFailed
        /// The request provably never reached the server (refused, above GOAWAY, never written).
        case notSent
        /// The request was written, and the stream or connection ended without an answer.
        case lostAnswer
        /// No answer before the deadline.
        case timeout
        /// The endpoint is shut down.
        case shutDown
    }

    public var kind: Kind
    public var detail: String
    /// False only when the server provably did not receive the request.
    public var mayHaveBeenDelivered: Bool

    public init(_ kind: Kind, _ detail: String, mayHaveBeenDelivered: Bool) {
        self.kind = kind
        self.detail = detail
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }

    public var description: String { "\(self.kind.rawValue): \(self.detail)" }
}

/// The handler of one request's stream: writes the request when the stream becomes active and
/// collects the answer; completes `promise` exactly once.
///
/// Completes as soon as the answer's last frame is read, before the stream closes, so a
/// connection that closes right after answering never loses an answer it delivered.
final class HTTP2ExchangeHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    private let request: HTTP2Request
    private let authority: String
    private let promise: EventLoopPromise<HTTP2Response>
    private let goAway: () -> HTTP2StreamID?
    private let deadline: NIODeadline
    private var timer: Scheduled<Void>?
    private var status: Int?
    private var headers: HPACKHeaders = [:]
    private var body: ByteBuffer?
    private var completed = false
    /// The request's HEADERS frame reached the socket.
    private var headersWritten = false
    private var lastError: (any Error)?
    private var streamID: HTTP2StreamID?

    /// Provider answers are a few hundred bytes; a larger one is not read into memory.
    static let maximumBodyBytes = 1 << 20

    init(
        request: HTTP2Request,
        authority: String,
        deadline: NIODeadline,
        promise: EventLoopPromise<HTTP2Response>,
        goAway: @escaping () -> HTTP2StreamID?
    ) {
        self.request = request
        self.deadline = deadline
        self.authority = authority
        self.promise = promise
        self.goAway = goAway
    }

    func channelActive(context: ChannelHandlerContext) {
        var headers = HPACKHeaders()
        headers.reserveCapacity(4 + self.request.headers.count)
        headers.add(name: ":method", value: self.request.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: self.authority)
        headers.add(name: ":path", value: self.request.path)
        headers.add(contentsOf: self.request.headers)
        headers.add(name: "content-length", value: String(self.request.body.readableBytes))
        let hasBody = self.request.body.readableBytes > 0
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.assumeIsolated().whenSuccess { [self] in
            self.headersWritten = true
        }
        let headersPayload = HTTP2Frame.FramePayload.headers(.init(headers: headers, endStream: !hasBody))
        context.write(self.wrapOutboundOut(headersPayload), promise: written)
        if hasBody {
            context.write(self.wrapOutboundOut(.data(.init(data: .byteBuffer(self.request.body), endStream: true))), promise: nil)
        }
        context.flush()
        let loopBoundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        self.timer = context.eventLoop.assumeIsolated().scheduleTask(deadline: self.deadline) { [self] in
            self.timedOut(context: loopBoundContext.value)
        }
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let frame):
            if self.status == nil {
                guard let value = frame.headers.first(name: ":status"), let status = Int(value) else {
                    self.fail(context: context, HTTP2ClientError(.lostAnswer, "an answer without a :status", mayHaveBeenDelivered: true))
                    return
                }
                if (100..<200).contains(status) { return }  // informational: the real answer follows
                self.status = status
                self.headers = frame.headers
            }
            if frame.endStream { self.succeed(context: context) }
        case .data(let frame):
            if case .byteBuffer(var bytes) = frame.data {
                guard (self.body?.readableBytes ?? 0) + bytes.readableBytes <= Self.maximumBodyBytes else {
                    self.fail(context: context, HTTP2ClientError(.lostAnswer, "an answer body over \(Self.maximumBodyBytes) bytes", mayHaveBeenDelivered: true))
                    return
                }
                if self.body == nil {
                    self.body = bytes
                } else {
                    self.body!.writeBuffer(&bytes)
                }
            }
            if frame.endStream { self.succeed(context: context) }
        default:
            break
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        self.lastError = error
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.timer?.cancel()
        if !self.completed {
            self.completed = true
            if let closed = self.lastError as? NIOHTTP2Errors.StreamClosed, closed.errorCode == .cancel, self.goAway() == nil {
                // swift-nio-http2 closes the streams above a GOAWAY's last-stream-id while it
                // reads the GOAWAY, before passing the frame on to the connection: classified at
                // once, they would look reset after being sent. The frame is passed on in the
                // same read, so the classification waits for the end of it.
                let loopBound = NIOLoopBound(self, eventLoop: context.eventLoop)
                context.eventLoop.execute {
                    let handler = loopBound.value
                    handler.promise.fail(handler.classifyLoss())
                }
            } else {
                self.promise.fail(self.classifyLoss())
            }
        }
        context.fireChannelInactive()
    }

    /// The deadline passed: the stream is reset (CANCEL) and the caller told.
    private func timedOut(context: ChannelHandlerContext) {
        guard !self.completed else { return }
        self.completed = true
        self.promise.fail(HTTP2ClientError(.timeout, "no answer before the deadline", mayHaveBeenDelivered: self.headersWritten))
        context.close(promise: nil)
    }

    private func succeed(context: ChannelHandlerContext) {
        guard !self.completed, let status = self.status else { return }
        self.completed = true
        self.timer?.cancel()
        self.promise.succeed(HTTP2Response(status: status, headers: self.headers, body: self.body ?? ByteBuffer()))
    }

    private func fail(context: ChannelHandlerContext, _ error: HTTP2ClientError) {
        guard !self.completed else { return }
        self.completed = true
        self.promise.fail(error)
        context.close(promise: nil)
    }

    /// The stream ended without an answer: could the server have acted on the request?
    private func classifyLoss() -> HTTP2ClientError {
        if let closed = self.lastError as? NIOHTTP2Errors.StreamClosed {
            switch closed.errorCode {
            case .refusedStream:
                return HTTP2ClientError(.notSent, "stream refused by the server (REFUSED_STREAM)", mayHaveBeenDelivered: false)
            case .cancel where self.isAboveGoAway(closed.streamID):
                // swift-nio-http2 closes the streams above a GOAWAY's last-stream-id with CANCEL:
                // by the GOAWAY's own word, the server did not process them.
                return HTTP2ClientError(.notSent, "stream above the server's GOAWAY last-stream-id", mayHaveBeenDelivered: false)
            default:
                return HTTP2ClientError(.lostAnswer, "stream reset (\(closed.errorCode)) before the answer", mayHaveBeenDelivered: true)
            }
        }
        guard self.headersWritten else {
            let cause = self.lastError.map { " (\($0))" } ?? ""
            return HTTP2ClientError(.notSent, "the connection closed before the request was written\(cause)", mayHaveBeenDelivered: false)
        }
        let cause = self.lastError.map { "\($0)" } ?? "connection closed"
        return HTTP2ClientError(.lostAnswer, "no answer: \(cause)", mayHaveBeenDelivered: true)
    }

    private func isAboveGoAway(_ streamID: HTTP2StreamID) -> Bool {
        guard let lastStreamID = self.goAway() else { return false }
        return streamID > lastStreamID
    }
}
