import NIOCore
import PushHTTP2
import Synchronization

/// One long-lived HTTP/2 connection of a pool: an `HTTP2Endpoint` (the project's own HTTP/2
/// client: one connection to its host at a time, reopened after GOAWAY), with the count of
/// requests it is carrying.
///
/// The endpoint honours SETTINGS (so the single stream APNs allows a new token-auth connection
/// until its first accepted request, and the raise after it) and GOAWAY (drains, then reconnects
/// on the next request).
final class APNSConnection: Sendable {
    private struct State {
        var outstanding = 0
        var retired = false
        /// Completed once the endpoint is shut down after `retire()`.
        var closed: EventLoopPromise<Void>?
        var shutdownStarted = false
    }

    let endpoint: HTTP2Endpoint
    /// Counts replacements within a slot, so many requests seeing the same IdleTimeout replace
    /// the connection once.
    let generation: Int
    private let state = Mutex(State())

    init(endpoint: HTTP2Endpoint, generation: Int) {
        self.endpoint = endpoint
        self.generation = generation
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

    /// Counts a request out; shuts the endpoint down when it was the last one of a retired connection.
    func end() {
        let shutDownNow: EventLoopPromise<Void>? = self.state.withLock {
            $0.outstanding -= 1
            return self.takeShutdown(&$0)
        }
        if let shutDownNow { self.shutDownEndpoint(completing: shutDownNow) }
    }

    /// Stops new requests; closes the connection gracefully once the ones in flight are answered.
    /// Idempotent; every call returns the same completion.
    @discardableResult
    func retire() -> EventLoopFuture<Void> {
        let (future, shutDownNow): (EventLoopFuture<Void>, EventLoopPromise<Void>?) = self.state.withLock {
            $0.retired = true
            let promise = $0.closed ?? self.endpoint.eventLoop.makePromise(of: Void.self)
            $0.closed = promise
            return (promise.futureResult, self.takeShutdown(&$0))
        }
        if let shutDownNow { self.shutDownEndpoint(completing: shutDownNow) }
        return future
    }

    private func takeShutdown(_ state: inout State) -> EventLoopPromise<Void>? {
        guard state.retired, state.outstanding == 0, !state.shutdownStarted, let promise = state.closed else { return nil }
        state.shutdownStarted = true
        return promise
    }

    private func shutDownEndpoint(completing promise: EventLoopPromise<Void>) {
        self.endpoint.shutdown().whenComplete { _ in promise.succeed(()) }
    }
}
