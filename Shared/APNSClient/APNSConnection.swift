import AsyncHTTPClient
import NIOCore
import Synchronization

/// One long-lived HTTP/2 connection of a pool: an AsyncHTTPClient `HTTPClient` that keeps a
/// single connection to its host, with the count of requests it is carrying.
///
/// AHC opens one HTTP/2 connection per host and client, honours SETTINGS (so the single stream
/// APNs allows a new token-auth connection until its first accepted request, and the raise
/// after it) and GOAWAY (drains, then reconnects on the next request). One `HTTPClient` per
/// slot therefore gives "N connections per pool" without writing an HTTP/2 client.
final class APNSConnection: Sendable {
    private struct State {
        var outstanding = 0
        var retired = false
        /// Completed once the client is shut down after `retire()`.
        var closed: EventLoopPromise<Void>?
        var shutdownStarted = false
    }

    let client: HTTPClient
    /// Counts replacements within a slot, so many requests seeing the same IdleTimeout replace
    /// the connection once.
    let generation: Int
    private let eventLoop: any EventLoop
    private let state = Mutex(State())

    init(client: HTTPClient, generation: Int, eventLoop: any EventLoop) {
        self.client = client
        self.generation = generation
        self.eventLoop = eventLoop
    }

    var outstanding: Int { self.state.withLock { $0.outstanding } }

    /// Counts a request in; false when the connection was retired meanwhile.
    func begin() -> Bool {
        self.state.withLock {
            guard !$0.retired else { return false }
            $0.outstanding += 1
            return true
        }
    }

    /// Counts a request out; shuts the client down when it was the last one of a retired connection.
    func end() {
        let shutDownNow: EventLoopPromise<Void>? = self.state.withLock {
            $0.outstanding -= 1
            return self.takeShutdown(&$0)
        }
        if let shutDownNow { self.shutDownClient(completing: shutDownNow) }
    }

    /// Stops new requests; closes the connection gracefully once the ones in flight are answered.
    /// Idempotent; every call returns the same completion.
    @discardableResult
    func retire() -> EventLoopFuture<Void> {
        let (future, shutDownNow): (EventLoopFuture<Void>, EventLoopPromise<Void>?) = self.state.withLock {
            $0.retired = true
            let promise = $0.closed ?? self.eventLoop.makePromise(of: Void.self)
            $0.closed = promise
            return (promise.futureResult, self.takeShutdown(&$0))
        }
        if let shutDownNow { self.shutDownClient(completing: shutDownNow) }
        return future
    }

    private func takeShutdown(_ state: inout State) -> EventLoopPromise<Void>? {
        guard state.retired, state.outstanding == 0, !state.shutdownStarted, let promise = state.closed else { return nil }
        state.shutdownStarted = true
        return promise
    }

    private func shutDownClient(completing promise: EventLoopPromise<Void>) {
        // Errors here mean "already shut down"; either way the client is closed.
        self.client.shutdown().whenComplete { _ in promise.succeed(()) }
    }
}
