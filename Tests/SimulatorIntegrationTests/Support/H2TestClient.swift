import Foundation
import NIOCore
import NIOHPACK
import NIOHTTP2
import NIOPosix
import NIOSSL
import ProviderSimulatorCore
import Synchronization

/// An answer as a test sees it.
struct TestResponse: Sendable {
    var status: Int
    var headers: HPACKHeaders
    var body: [UInt8]

    var json: [String: Any]? {
        (try? JSONSerialization.jsonObject(with: Data(self.body))) as? [String: Any]
    }

    /// APNs `reason`.
    var reason: String? { self.json?["reason"] as? String }

    /// FCM `error.details[0].errorCode`.
    var fcmErrorCode: String? {
        let error = self.json?["error"] as? [String: Any]
        let details = error?["details"] as? [[String: Any]]
        return details?.first?["errorCode"] as? String
    }

    var text: String { String(decoding: self.body, as: UTF8.self) }
}

/// What the server said on the connection itself: SETTINGS and GOAWAY frames.
final class ConnectionEvents: Sendable {
    private struct Storage {
        var maxConcurrentStreamsAdvertised: [Int] = []
        var goAway: (lastStreamID: Int, debugData: String)?
        var closed = false
    }

    private let storage = Mutex(Storage())

    var maxConcurrentStreamsAdvertised: [Int] { self.storage.withLock { $0.maxConcurrentStreamsAdvertised } }
    var goAwayReceived: Bool { self.storage.withLock { $0.goAway != nil } }
    var goAwayDebugData: String? { self.storage.withLock { $0.goAway?.debugData } }
    var closed: Bool { self.storage.withLock { $0.closed } }

    fileprivate func record(_ frame: HTTP2Frame) {
        switch frame.payload {
        case .settings(.settings(let settings)):
            for setting in settings where setting.parameter == .maxConcurrentStreams {
                self.storage.withLock { $0.maxConcurrentStreamsAdvertised.append(setting.value) }
            }
        case .goAway(let lastStreamID, _, let data):
            let text = data.map { String(buffer: $0) } ?? ""
            self.storage.withLock { $0.goAway = (Int(lastStreamID), text) }
        default:
            break
        }
    }

    fileprivate func recordClosed() {
        self.storage.withLock { $0.closed = true }
    }

    /// Polls `condition` every 20 ms for up to `seconds`.
    func wait(seconds: Double = 3, until condition: (ConnectionEvents) -> Bool) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(self) { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return condition(self)
    }
}

/// A bare swift-nio-http2 client over TLS (ALPN h2) that trusts the simulator's CA: one
/// connection, one stream per request, and a view of the connection-level frames.
final class H2TestClient: Sendable {
    let channel: any Channel
    let multiplexer: NIOHTTP2Handler.StreamMultiplexer
    let events: ConnectionEvents

    private init(channel: any Channel, multiplexer: NIOHTTP2Handler.StreamMultiplexer, events: ConnectionEvents) {
        self.channel = channel
        self.multiplexer = multiplexer
        self.events = events
    }

    /// `clientCertificate`: presented when the server asks for one (APNs certificate auth).
    static func connect(
        port: Int,
        caPEM: String,
        clientCertificate: APNsCertificateAuthority.ClientCertificate? = nil,
        group: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) async throws -> H2TestClient {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
        tls.applicationProtocols = ["h2"]
        if let clientCertificate {
            tls.certificateChain = try NIOSSLCertificate.fromPEMBytes(Array(clientCertificate.certificateChainPEM.utf8)).map { .certificate($0) }
            tls.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: Array(clientCertificate.privateKeyPEM.utf8), format: .pem))
        }
        let sslContext = try NIOSSLContext(configuration: tls)
        let events = ConnectionEvents()
        let (channel, multiplexer) = try await ClientBootstrap(group: group)
            .connect(host: "127.0.0.1", port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: sslContext, serverHostname: "localhost"))
                    let multiplexer = try sync.configureHTTP2Pipeline(
                        mode: .client,
                        connectionConfiguration: .init(),
                        streamConfiguration: .init()
                    ) { stream in stream.eventLoop.makeSucceededVoidFuture() }
                    try sync.addHandler(ConnectionFrameRecorder(events: events))
                    return (channel, multiplexer)
                }
            }
        return H2TestClient(channel: channel, multiplexer: multiplexer, events: events)
    }

    func send(
        _ method: String = "POST",
        _ path: String,
        headers: [(String, String)] = [],
        body: [UInt8] = []
    ) async throws -> TestResponse {
        let promise = self.channel.eventLoop.makePromise(of: TestResponse.self)
        let stream: any Channel
        do {
            stream = try await self.multiplexer.createStreamChannel { stream in
                stream.eventLoop.makeCompletedFuture {
                    try stream.pipeline.syncOperations.addHandler(ResponseCollector(promise: promise))
                }
            }.get()
        } catch {
            promise.fail(error)  // a promise dropped unfulfilled is a crash in debug builds
            throw error
        }
        var requestHeaders = HPACKHeaders([
            (":method", method), (":path", path), (":scheme", "https"), (":authority", "localhost"),
        ])
        for (name, value) in headers {
            requestHeaders.add(name: name, value: value)
        }
        if body.isEmpty {
            stream.writeAndFlush(HTTP2Frame.FramePayload.headers(.init(headers: requestHeaders, endStream: true)), promise: nil)
        } else {
            stream.write(HTTP2Frame.FramePayload.headers(.init(headers: requestHeaders)), promise: nil)
            stream.writeAndFlush(
                HTTP2Frame.FramePayload.data(.init(data: .byteBuffer(ByteBuffer(bytes: body)), endStream: true)),
                promise: nil
            )
        }
        return try await promise.futureResult.get()
    }

    func send(_ method: String = "POST", _ path: String, headers: [(String, String)] = [], json: String) async throws -> TestResponse {
        try await self.send(method, path, headers: headers, body: Array(json.utf8))
    }

    func close() async {
        try? await self.channel.close()
    }
}

private final class ConnectionFrameRecorder: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    let events: ConnectionEvents

    init(events: ConnectionEvents) {
        self.events = events
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        self.events.record(self.unwrapInboundIn(data))
    }

    func channelInactive(context: ChannelHandlerContext) {
        self.events.recordClosed()
        context.fireChannelInactive()
    }
}

private final class ResponseCollector: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame.FramePayload

    struct StreamClosedWithoutAnswer: Error {}

    let promise: EventLoopPromise<TestResponse>
    var status: Int?
    var headers = HPACKHeaders()
    var body: [UInt8] = []
    var done = false

    init(promise: EventLoopPromise<TestResponse>) {
        self.promise = promise
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch self.unwrapInboundIn(data) {
        case .headers(let frame):
            if self.status == nil, let status = frame.headers.first(name: ":status").flatMap(Int.init) {
                self.status = status
                self.headers = frame.headers
            }
            if frame.endStream { self.finish() }
        case .data(let frame):
            if case .byteBuffer(let bytes) = frame.data {
                self.body += bytes.readableBytesView
            }
            if frame.endStream { self.finish() }
        default:
            break
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        if !self.done {
            self.done = true
            self.promise.fail(StreamClosedWithoutAnswer())
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        if !self.done {
            self.done = true
            self.promise.fail(error)
        }
        context.close(promise: nil)
    }

    private func finish() {
        guard !self.done else { return }
        self.done = true
        self.promise.succeed(TestResponse(status: self.status ?? 0, headers: self.headers, body: self.body))
    }
}
