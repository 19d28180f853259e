import NIOCore
import NIOHTTP2

/// Per-connection bookkeeping: streams, GOAWAY, the stream limit advertised, the provider key a
/// connection is bound to, its client certificate.
///
/// `@unchecked Sendable`: the registry holds it across threads, but every mutable field is only
/// touched on `channel.eventLoop` (stream channels share their connection's loop).
package final class ConnectionState: @unchecked Sendable {
    package let channel: any Channel
    private let state: SimulatorState
    private let goAwayDebugData: String

    /// The provider key (APNs "team:kid") the first valid token of this connection used.
    package var boundProviderKey: String?
    /// The verdict on the client certificate presented in the TLS handshake; nil when none was
    /// presented or the simulator does not ask for one. Set before the handshake completes.
    package var clientCertificate: ClientCertificateCheck?
    /// True once a request on this connection succeeded.
    package private(set) var hasSucceeded = false
    /// MAX_CONCURRENT_STREAMS last advertised to the client.
    package private(set) var advertisedMaxConcurrentStreams: Int
    private var activeStreams = 0
    private var streamsOpened = 0
    private var highestStreamID = HTTP2StreamID.rootStream
    private var goAwayLastStreamID: HTTP2StreamID?

    init(channel: any Channel, state: SimulatorState, advertisedMaxConcurrentStreams: Int, goAwayDebugData: String) {
        self.channel = channel
        self.state = state
        self.advertisedMaxConcurrentStreams = advertisedMaxConcurrentStreams
        self.goAwayDebugData = goAwayDebugData
    }

    func streamOpened(_ streamID: HTTP2StreamID) {
        self.activeStreams += 1
        self.streamsOpened += 1
        if streamID > self.highestStreamID { self.highestStreamID = streamID }
        self.state.recordStream(concurrent: self.activeStreams)
        if let limit = self.state.faults.goAwayAfterStreams, self.streamsOpened >= limit {
            self.sendGoAway()
        }
    }

    func streamClosed() {
        self.activeStreams -= 1
        self.closeIfDrained()
    }

    /// Whether a stream was opened after this connection sent GOAWAY (it must not be processed).
    func isRefused(_ streamID: HTTP2StreamID) -> Bool {
        guard let last = self.goAwayLastStreamID else { return false }
        return streamID > last
    }

    /// Records a successful answer; the first one raises the stream limit to the configured one.
    package func markSucceeded() {
        guard !self.hasSucceeded else { return }
        self.hasSucceeded = true
        self.advertise(maxConcurrentStreams: self.state.maxConcurrentStreams)
    }

    /// Sends a SETTINGS frame with a new MAX_CONCURRENT_STREAMS when it differs from the last one.
    func advertise(maxConcurrentStreams: Int) {
        self.channel.eventLoop.preconditionInEventLoop()
        guard maxConcurrentStreams != self.advertisedMaxConcurrentStreams, self.goAwayLastStreamID == nil else { return }
        self.advertisedMaxConcurrentStreams = maxConcurrentStreams
        let settings = HTTP2Frame(
            streamID: .rootStream,
            payload: .settings(.settings([HTTP2Setting(parameter: .maxConcurrentStreams, value: maxConcurrentStreams)]))
        )
        self.channel.writeAndFlush(settings, promise: nil)
        self.state.recordSettingsUpdate()
    }

    /// Sends GOAWAY (NO_ERROR) naming the highest stream seen, so streams in flight finish;
    /// the connection closes once they have.
    func sendGoAway() {
        self.channel.eventLoop.preconditionInEventLoop()
        guard self.goAwayLastStreamID == nil, self.channel.isActive else { return }
        self.goAwayLastStreamID = self.highestStreamID
        let frame = HTTP2Frame(
            streamID: .rootStream,
            payload: .goAway(
                lastStreamID: self.highestStreamID,
                errorCode: .noError,
                opaqueData: ByteBuffer(string: self.goAwayDebugData)
            )
        )
        self.channel.writeAndFlush(frame, promise: nil)
        self.state.recordGoAway()
        self.closeIfDrained()
    }

    private func closeIfDrained() {
        guard self.goAwayLastStreamID != nil, self.activeStreams <= 0 else { return }
        // Closing too early loses answers the client has not read yet, and it then retries
        // requests that were processed: the last answers may still sit in the channel's
        // outbound buffer (a busy socket), and closing while the client's late frames still
        // arrive makes the kernel reset the connection, which discards what the client had not
        // read. So: a PING written behind the answers completes once they reached the socket;
        // then only the output is closed (TLS close_notify, FIN), the client reads everything
        // up to it and closes; a connection the client has not closed 10 s later is closed here.
        let channel = self.channel
        let ping = HTTP2Frame(streamID: .rootStream, payload: .ping(HTTP2PingData(withInteger: 0), ack: false))
        channel.writeAndFlush(ping).whenComplete { _ in
            channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
            channel.eventLoop.scheduleTask(in: .seconds(10)) {
                channel.close(promise: nil)
            }
        }
    }
}
