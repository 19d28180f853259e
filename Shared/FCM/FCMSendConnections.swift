import Logging
import Metrics
import NIOCore
import PushHTTP2
import Synchronization

/// The long-lived HTTP/2 connections to the send endpoint: one `HTTP2Endpoint` per slot (the
/// project's own HTTP/2 client: one connection at a time, honouring SETTINGS and GOAWAY, reopened
/// after GOAWAY), each on its own event loop. Requests go to the slot with the fewest outstanding
/// requests, at most `streamsPerConnection` at a time per slot.
final class FCMSendConnections: Sendable {
    private typealias Waiter = CheckedContinuation<Int?, Never>

    private struct State {
        var inUse: [Int]
        var cursor = 0
        var nextWaiterID: UInt64 = 0
        /// FIFO of callers waiting for a stream, by id.
        var waiters: [(id: UInt64, continuation: Waiter)] = []
        var cancelledWaiters: Set<UInt64> = []
    }

    private let endpoints: [HTTP2Endpoint]
    private let state: Mutex<State>
    private let counter: ConnectionCounter
    private let streamsPerConnection: Int

    init(count: Int, streamsPerConnection: Int, configuration: HTTP2Endpoint.Configuration, eventLoopGroup: any EventLoopGroup) {
        let slots = max(1, count)
        self.streamsPerConnection = max(1, streamsPerConnection)
        self.state = Mutex(State(inUse: Array(repeating: 0, count: slots)))
        let counter = ConnectionCounter()
        self.endpoints = (0..<slots).map { _ in
            HTTP2Endpoint(configuration: configuration, eventLoop: eventLoopGroup.next()) { channel in
                counter.opened()
                channel.closeFuture.whenComplete { _ in counter.closed() }
            }
        }
        self.counter = counter
    }

    /// HTTP/2 connections currently open across all slots.
    var openConnections: Int { self.counter.value }

    /// Runs `body` with the least busy slot's endpoint once that slot has a free stream. Callers
    /// beyond `streamsPerConnection` per slot wait here, in order.
    func withEndpoint<T>(_ body: (HTTP2Endpoint) async throws(FCMClientError) -> T) async throws(FCMClientError) -> T {
        let index = try await self.acquire()
        defer { self.release(index) }
        return try await body(self.endpoints[index])
    }

    /// A slot with a free stream and its endpoint, without waiting; nil when every slot is full
    /// (`release(_:)` the index once answered).
    func tryAcquire() -> (Int, HTTP2Endpoint)? {
        let index: Int? = self.state.withLock { state in
            // Waiters go first: a free stream is theirs.
            guard state.waiters.isEmpty else { return nil }
            return self.takeFreeStream(&state)
        }
        return index.map { ($0, self.endpoints[$0]) }
    }

    /// Counts a stream in on the least busy slot (ties by round robin); nil when all are full.
    private func takeFreeStream(_ state: inout State) -> Int? {
        let count = state.inUse.count
        var best = state.cursor % count
        for offset in 0..<count {
            let candidate = (state.cursor + offset) % count
            if state.inUse[candidate] < state.inUse[best] { best = candidate }
        }
        guard state.inUse[best] < self.streamsPerConnection else { return nil }
        state.cursor = (best + 1) % count
        state.inUse[best] += 1
        return best
    }

    private func acquire() async throws(FCMClientError) -> Int {
        enum Admission {
            case slot(Int)
            case wait(UInt64)
        }
        let admission: Admission = self.state.withLock { state in
            if let index = self.takeFreeStream(&state) { return .slot(index) }
            state.nextWaiterID += 1
            return .wait(state.nextWaiterID)
        }
        switch admission {
        case .slot(let index):
            return index
        case .wait(let id):
            let index = await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: Waiter) in
                    let cancelled = self.state.withLock { state in
                        if state.cancelledWaiters.remove(id) != nil { return true }
                        state.waiters.append((id, continuation))
                        return false
                    }
                    if cancelled { continuation.resume(returning: nil) }
                }
            } onCancel: {
                let waiter: Waiter? = self.state.withLock { state in
                    if let position = state.waiters.firstIndex(where: { $0.id == id }) {
                        return state.waiters.remove(at: position).continuation
                    }
                    state.cancelledWaiters.insert(id)
                    return nil
                }
                waiter?.resume(returning: nil)
            }
            guard let index else {
                throw FCMClientError(.cancelled, "send: cancelled while waiting for a stream", isRetriable: true)
            }
            return index
        }
    }

    func release(_ index: Int) {
        let waiter: Waiter? = self.state.withLock { state in
            if !state.waiters.isEmpty {
                return state.waiters.removeFirst().continuation  // the stream passes to the next caller
            }
            state.inUse[index] -= 1
            return nil
        }
        waiter?.resume(returning: index)
    }

    func shutdown() async throws {
        let waiters = self.state.withLock { state in
            defer { state.waiters = [] }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume(returning: nil) }
        var firstError: (any Error)?
        for endpoint in self.endpoints {
            do { try await endpoint.shutdown().get() } catch { firstError = firstError ?? error }
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
