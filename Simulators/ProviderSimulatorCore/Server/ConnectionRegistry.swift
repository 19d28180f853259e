import NIOCore
import Synchronization

/// The live connections of one simulator, so the control API can reach all of them (GOAWAY now,
/// a new stream limit).
package final class ConnectionRegistry: Sendable {
    private let connections = Mutex<[ObjectIdentifier: ConnectionState]>([:])

    func add(_ connection: ConnectionState) {
        let key = ObjectIdentifier(connection)
        self.connections.withLock { $0[key] = connection }
        connection.channel.closeFuture.whenComplete { _ in
            self.connections.withLock { _ = $0.removeValue(forKey: key) }
        }
    }

    package var count: Int { self.connections.withLock { $0.count } }

    /// Runs `body` on each connection's event loop.
    package func forEach(_ body: @escaping @Sendable (ConnectionState) -> Void) {
        let all = self.connections.withLock { Array($0.values) }
        for connection in all {
            connection.channel.eventLoop.execute { body(connection) }
        }
    }

    package func closeAll() {
        let all = self.connections.withLock { Array($0.values) }
        for connection in all {
            connection.channel.close(promise: nil)
        }
    }
}
