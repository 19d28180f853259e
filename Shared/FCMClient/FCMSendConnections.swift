import AsyncHTTPClient
import Logging
import Metrics
import NIOCore
import NIOSSL
import Synchronization

/// The long-lived HTTP/2 connections to the send endpoint: one `HTTPClient` per slot, each on its
/// own event loop, so each holds exactly one HTTP/2 connection (AsyncHTTPClient multiplexes all
/// of a host's requests on one connection per event loop, honours SETTINGS and GOAWAY, and
/// reconnects after GOAWAY). Requests go to the slot with the fewest outstanding requests.
final class FCMSendConnections: Sendable {
    private let clients: [HTTPClient]
    private let outstanding: Mutex<(counts: [Int], cursor: Int)>
    private let counter: ConnectionCounter

    init(count: Int, configuration: HTTPClient.Configuration, eventLoopGroup: any EventLoopGroup, logger: Logger) {
        let slots = max(1, count)
        self.outstanding = Mutex((Array(repeating: 0, count: slots), 0))
        var clients: [HTTPClient] = []
        let counter = ConnectionCounter()
        for _ in 0..<slots {
            var slotConfiguration = configuration
            slotConfiguration.http2ConnectionDebugInitializer = { channel in
                counter.opened()
                channel.closeFuture.whenComplete { _ in counter.closed() }
                return channel.eventLoop.makeSucceededVoidFuture()
            }
            clients.append(HTTPClient(eventLoopGroup: eventLoopGroup.next(), configuration: slotConfiguration, backgroundActivityLogger: logger))
        }
        self.clients = clients
        self.counter = counter
    }

    /// HTTP/2 connections currently open across all slots.
    var openConnections: Int { self.counter.value }

    /// Runs `body` with the least busy slot's client.
    func withClient<T>(_ body: (HTTPClient) async throws(FCMClientError) -> T) async throws(FCMClientError) -> T {
        let index = self.outstanding.withLock { state in
            let count = state.counts.count
            var best = state.cursor % count
            for offset in 0..<count {
                let candidate = (state.cursor + offset) % count
                if state.counts[candidate] < state.counts[best] { best = candidate }
            }
            state.cursor = (best + 1) % count
            state.counts[best] += 1
            return best
        }
        defer { self.outstanding.withLock { $0.counts[index] -= 1 } }
        return try await body(self.clients[index])
    }

    func shutdown() async throws {
        var firstError: (any Error)?
        for client in self.clients {
            do { try await client.shutdown() } catch { firstError = firstError ?? error }
        }
        if let firstError { throw firstError }
    }
}

/// Counts open HTTP/2 connections and mirrors the count to the `push_fcm_connections` gauge.
final class ConnectionCounter: Sendable {
    private let count = Atomic<Int>(0)
    private let gauge = Gauge(label: "push_fcm_connections")

    var value: Int { self.count.load(ordering: .relaxed) }

    func opened() {
        let value = self.count.wrappingAdd(1, ordering: .relaxed).newValue
        self.gauge.record(value)
    }

    func closed() {
        let value = self.count.wrappingSubtract(1, ordering: .relaxed).newValue
        self.gauge.record(value)
    }
}
