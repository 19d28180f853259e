import Foundation
import PushTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `PUSH_HTTP_IDLE_TIMEOUT_MS` on the registration service's HTTP server (every service's
/// servers are built the same way, `RuntimeConfiguration.httpServer`): a connection that sends
/// nothing, or a request's head slower than the timeout (a slowloris), is closed.
@Suite("HTTP idle timeout against the real registration service", .serialized)
struct HTTPIdleTimeoutTests {
    /// A raw TCP connection to 127.0.0.1:`port`.
    final class Connection {
        let socket: Int32

        init(port: Int) throws {
            socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            try #require(connected == 0, "connect to port \(port)")
        }

        deinit { close(socket) }

        func send(_ text: String) {
            _ = text.withCString { Glibc.send(socket, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
        }

        /// Waits up to `limit` for the peer to close: how long it took, or nil if it did not.
        /// Bytes the server sends meanwhile (an answer) are read and ignored.
        func closedByPeer(within limit: Duration) -> Duration? {
            var timeout = timeval(tv_sec: 0, tv_usec: 200_000)
            setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
            let started = ContinuousClock.now
            var buffer = [UInt8](repeating: 0, count: 4096)
            while ContinuousClock.now - started < limit {
                let read = recv(socket, &buffer, buffer.count, 0)
                if read == 0 { return ContinuousClock.now - started }
                if read < 0 && errno != EAGAIN && errno != EWOULDBLOCK { return ContinuousClock.now - started }
            }
            return nil
        }
    }

    @Test("with a 600 ms idle timeout: a silent connection and one sending its request head byte by byte too slowly are closed; a prompt request is answered")
    func idleConnectionsClosed() async throws {
        try await RegistrationHarness.run(environment: ["PUSH_HTTP_IDLE_TIMEOUT_MS": "600"]) { h in
            let port = try #require(h.baseURL.port)
            let silent = try Connection(port: port)
            let silentClosed = silent.closedByPeer(within: .seconds(5))
            #expect(
                silentClosed.map { $0 >= .milliseconds(500) && $0 < .seconds(3) } == true, "silent connection closed after \(String(describing: silentClosed))")

            // The head trickles in, a piece every 200 ms: never complete within the timeout.
            let slow = try Connection(port: port)
            let head = "POST /nms/mobile/1/registerIOS.jssp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
            let started = ContinuousClock.now
            var closedAfter: Duration?
            for piece in head.split(separator: "\n", omittingEmptySubsequences: false) {
                slow.send(String(piece) + "\n")
                if let closed = slow.closedByPeer(within: .milliseconds(400)) {
                    closedAfter = ContinuousClock.now - started - .milliseconds(400) + closed
                    break
                }
            }
            if closedAfter == nil, let closed = slow.closedByPeer(within: .seconds(3)) { closedAfter = ContinuousClock.now - started - .seconds(3) + closed }
            #expect(closedAfter != nil, "a request head trickling in slower than the idle timeout is cut off")

            // The server itself is fine: a prompt request is answered.
            #expect(try await h.post("/nms/mobile/1/registerIOS.jssp", body: "").status == 400, "an empty registration is refused, promptly")
        }
    }
}
