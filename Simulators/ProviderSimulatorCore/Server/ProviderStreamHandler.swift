import NIOCore
import NIOHPACK
import NIOHTTP2
import PushWire

/// Handles one HTTP/2 stream at frame level: collects HEADERS and DATA, asks the control API or
/// the provider behaviour for an answer, writes it (after any injected latency).
final class ProviderStreamHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload
    typealias OutboundOut = HTTP2Frame.FramePayload

    /// Bodies above this are not buffered further; both providers reject them as too large anyway.
    static let maximumBufferedBody = 1 << 20

    private let behaviour: any ProviderBehaviour
    private let control: ControlAPI
    private let state: SimulatorState
    private let connection: ConnectionState
    private var streamID: HTTP2StreamID = .rootStream
    private var requestHeaders: HPACKHeaders?
    /// When the request's HEADERS frame arrived (`SimulatorRequest.receivedAtMs`).
    private var receivedAtMs: Int64 = 0
    private var body: ByteBuffer?
    private var answered = false

    init(behaviour: any ProviderBehaviour, control: ControlAPI, state: SimulatorState, connection: ConnectionState) {
        self.behaviour = behaviour
        self.control = control
        self.state = state
        self.connection = connection
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if let id = try? context.channel.syncOptions?.getOption(HTTP2StreamChannelOptions.streamID) {
            self.streamID = id
        }
        self.connection.streamOpened(self.streamID)
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.connection.streamClosed()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let headers):
            if self.requestHeaders == nil {
                self.requestHeaders = headers.headers
                self.receivedAtMs = APNsBehaviour.nowMilliseconds()
            }
            if headers.endStream { self.answer(context: context) }
        case .data(let data):
            if case .byteBuffer(var bytes) = data.data {
                if self.body == nil {
                    self.body = bytes
                } else if self.body!.readableBytes < Self.maximumBufferedBody {
                    self.body!.writeBuffer(&bytes)
                }
            }
            if data.endStream { self.answer(context: context) }
        default:
            break
        }
    }

    private func answer(context: ChannelHandlerContext) {
        guard !self.answered else { return }
        self.answered = true
        if self.connection.isRefused(self.streamID) {
            // Opened after this connection's GOAWAY: not processed, and said so with
            // REFUSED_STREAM (RFC 9113 8.7), which tells the client it may retry safely.
            context.writeAndFlush(self.wrapOutboundOut(.rstStream(.refusedStream)), promise: nil)
            context.close(promise: nil)
            return
        }
        let headers = self.requestHeaders ?? HPACKHeaders()
        let request = SimulatorRequest(
            method: headers.first(name: ":method") ?? "GET",
            rawPath: headers.first(name: ":path") ?? "/",
            headers: headers,
            body: self.body ?? context.channel.allocator.buffer(capacity: 0),
            receivedAtMs: self.requestHeaders == nil ? APNsBehaviour.nowMilliseconds() : self.receivedAtMs
        )
        var response: SimulatorResponse
        if ControlAPI.handles(request.path) {
            response = self.control.respond(to: request)
        } else {
            response = self.behaviour.respond(to: request, on: self.connection)
            self.state.recordAnswer(status: response.status, reason: response.reason)
            if response.succeeded {
                self.connection.markSucceeded()
            }
            response.delayMilliseconds += self.state.faults.latencyMs
        }
        if response.delayMilliseconds > 0 {
            context.eventLoop.assumeIsolated().scheduleTask(deadline: AnswerTiming.deadline(afterMilliseconds: response.delayMilliseconds)) {
                self.write(response, context: context)
            }
        } else {
            self.write(response, context: context)
        }
    }

    private func write(_ response: SimulatorResponse, context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        var headers = HPACKHeaders()
        headers.reserveCapacity(response.headers.count + 2)
        headers.add(name: ":status", value: String(response.status))
        for (name, value) in response.headers {
            headers.add(name: name, value: value)
        }
        if let body = response.body, body.readableBytes > 0 {
            headers.add(name: HTTPHeaderName.contentLength, value: String(body.readableBytes))
            context.write(self.wrapOutboundOut(.headers(.init(headers: headers))), promise: nil)
            context.writeAndFlush(self.wrapOutboundOut(.data(.init(data: .byteBuffer(body), endStream: true))), promise: nil)
        } else {
            context.writeAndFlush(self.wrapOutboundOut(.headers(.init(headers: headers, endStream: true))), promise: nil)
        }
    }
}

/// When a delayed answer is written.
package enum AnswerTiming {
    /// `milliseconds` from now, rounded up to a whole millisecond of the monotonic clock: the
    /// answers to requests that arrived together (within a millisecond) are due together, run in
    /// one event-loop tick and leave in one flush, as a server's answers to one read would.
    /// Without it every delayed answer had its own timer wake-up and its own TLS write, and the
    /// client a read per answer (docs/simulators.md, "Latency").
    package static func deadline(afterMilliseconds milliseconds: Int, now: NIODeadline = .now()) -> NIODeadline {
        let millisecond: UInt64 = 1_000_000
        let due = now.uptimeNanoseconds + UInt64(milliseconds) * millisecond
        return .uptimeNanoseconds((due + millisecond - 1) / millisecond * millisecond)
    }
}
