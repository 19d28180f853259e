import Logging
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import PushHTTP2

/// A provider simulator listening for HTTP/2 over TLS: raw swift-nio-http2, one
/// `ProviderStreamHandler` per stream, so SETTINGS and GOAWAY are the simulator's to send.
package final class SimulatorServer: Sendable {
    /// Where and how to listen.
    package struct Configuration: Sendable {
        package var host: String = "127.0.0.1"
        /// 0 picks a free port; read the bound one from `SimulatorServer.port`.
        package var port: Int = 0
        package var tls: SimulatorTLS

        package init(tls: SimulatorTLS) {
            self.tls = tls
        }
    }

    /// The port actually bound.
    package let port: Int
    /// The CA PEM clients must trust when the certificate was generated.
    package let caCertificatePEM: String?
    package let state: SimulatorState
    package let connections: ConnectionRegistry
    private let listener: any Channel

    private init(port: Int, caCertificatePEM: String?, state: SimulatorState, connections: ConnectionRegistry, listener: any Channel) {
        self.port = port
        self.caCertificatePEM = caCertificatePEM
        self.state = state
        self.connections = connections
        self.listener = listener
    }

    /// Binds and starts serving; returns once the port is bound.
    package static func start(
        configuration: Configuration,
        behaviour: any ProviderBehaviour,
        state: SimulatorState,
        group: any EventLoopGroup,
        logger: Logger
    ) async throws -> SimulatorServer {
        let clientCertificates = behaviour.clientCertificates
        let sslContext = try configuration.tls.makeServerContext(clientCertificates: clientCertificates)
        let connections = ConnectionRegistry()
        let control = ControlAPI(behaviour: behaviour, state: state, connections: connections)

        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 1024)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelOption(.maxMessagesPerRead, value: 16)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let initialStreams = behaviour.limitsStreamsUntilFirstSuccess ? 1 : state.maxConcurrentStreams
                    let connection = ConnectionState(
                        channel: channel,
                        state: state,
                        advertisedMaxConcurrentStreams: initialStreams,
                        goAwayDebugData: behaviour.goAwayDebugData
                    )
                    var connectionConfiguration = NIOHTTP2Handler.ConnectionConfiguration()
                    connectionConfiguration.initialSettings = [
                        HTTP2Setting(parameter: .maxConcurrentStreams, value: initialStreams),
                        HTTP2Setting(parameter: .maxHeaderListSize, value: 1 << 16),
                        HTTP2Setting(parameter: .initialWindowSize, value: 1 << 20),
                    ]
                    connectionConfiguration.targetWindowSize = 1 << 24
                    var streamConfiguration = NIOHTTP2Handler.StreamConfiguration()
                    streamConfiguration.targetWindowSize = 1 << 20
                    let sync = channel.pipeline.syncOperations
                    if let clientCertificates {
                        try sync.addHandler(
                            NIOSSLServerHandler(
                                context: sslContext, customVerificationCallback: clientCertificates.verificationCallback(for: connection, logger: logger))
                        )
                    } else {
                        try sync.addHandler(NIOSSLServerHandler(context: sslContext))
                    }
                    // Answers written in one event-loop tick leave in one TLS write, as the
                    // client's requests do: one flush per answer cost the simulator and the
                    // client a system call and a wake-up each.
                    try sync.addHandler(HTTP2FlushCoalescingHandler())
                    _ = try sync.configureHTTP2Pipeline(
                        mode: .server,
                        connectionConfiguration: connectionConfiguration,
                        streamConfiguration: streamConfiguration
                    ) { stream in
                        stream.eventLoop.makeCompletedFuture {
                            try stream.pipeline.syncOperations.addHandler(
                                ProviderStreamHandler(behaviour: behaviour, control: control, state: state, connection: connection)
                            )
                        }
                    }
                    try sync.addHandler(ConnectionErrorHandler(logger: logger))
                    state.recordConnection()
                    connections.add(connection)
                }
            }

        let listener = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        let port = listener.localAddress?.port ?? configuration.port
        logger.info(
            "provider simulator listening",
            metadata: ["provider": "\(behaviour.providerName)", "host": "\(configuration.host)", "port": "\(port)"]
        )
        return SimulatorServer(port: port, caCertificatePEM: configuration.tls.caCertificatePEM, state: state, connections: connections, listener: listener)
    }

    /// Sends GOAWAY on every open connection.
    package func goAwayAll() {
        self.connections.forEach { $0.sendGoAway() }
    }

    /// Stops listening and closes every connection.
    package func shutdown() async throws {
        try? await self.listener.close()
        self.connections.closeAll()
    }

    /// Completes when the listening socket closes.
    package func waitUntilClosed() async throws {
        try await self.listener.closeFuture.get()
    }
}

/// Last handler of a connection: swallows connection-level frames the multiplexer forwards and
/// closes on errors (TLS failures, protocol errors) with a debug log.
private final class ConnectionErrorHandler: ChannelInboundHandler {
    typealias InboundIn = HTTP2Frame

    let logger: Logger

    init(logger: Logger) {
        self.logger = logger
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        switch error {
        case is NIOHTTP2Errors.StreamError, is NIOHTTP2Errors.NoSuchStream, is NIOHTTP2Errors.StreamClosed,
            is NIOHTTP2Errors.RaisedGoawayLastStreamID:
            // About one stream, not the connection: frames for a stream already closed, or,
            // after this side's GOAWAY, for a stream above its last-stream-id, which RFC 9113
            // (6.8) lets it discard. Closing the connection here would reset it and throw away
            // answers the client has not read yet (found by the client's GOAWAY tests once the
            // client batched its writes: the last processed stream's answer was lost).
            self.logger.debug("stream error", metadata: ["error": "\(error)"])
        default:
            self.logger.debug("connection error", metadata: ["error": "\(error)"])
            context.close(promise: nil)
        }
    }
}
