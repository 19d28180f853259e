import Synchronization

/// A counting semaphore for tasks: `acquire` suspends while no permit is left. Used to bound the
/// records a sender holds and the sends it has in flight (back-pressure instead of memory).
/// `close()` ends every wait, present and future, with `Closed`: how a stopping sender's reader
/// stops waiting for room.
final class AsyncSemaphore: Sendable {
    private struct State {
        var available: Int
        var waiters: [(id: Int, continuation: CheckedContinuation<Void, any Error>)] = []
        var nextId = 0
        var closed = false
    }

    /// The semaphore was closed while or before this task waited for a permit.
    struct Closed: Error {}

    private let state: Mutex<State>

    init(permits: Int) {
        precondition(permits > 0)
        state = Mutex(State(available: permits))
    }

    /// Waits for a permit; throws `CancellationError` if the task is cancelled while waiting,
    /// `Closed` if the semaphore is closed and no permit is free.
    func acquire() async throws {
        let id: Int? = try state.withLock { state in
            if state.available > 0 {
                state.available -= 1
                return nil
            }
            if state.closed { throw Closed() }
            defer { state.nextId += 1 }
            return state.nextId
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let refusal: (any Error)? = state.withLock { state in
                    if Task.isCancelled { return CancellationError() }
                    if state.available > 0 {  // released between the check above and here
                        state.available -= 1
                        continuation.resume()
                        return nil
                    }
                    if state.closed { return Closed() }
                    state.waiters.append((id, continuation))
                    return nil
                }
                if let refusal { continuation.resume(throwing: refusal) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, any Error>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume(throwing: CancellationError())
        }
    }

    /// Takes `count` permits one after the other (a stopping sender taking back every in-flight
    /// permit: waiting for every send to be answered).
    func acquire(_ count: Int) async throws {
        for _ in 0..<count { try await acquire() }
    }

    /// Ends the waits: every task waiting for a permit, and every later `acquire` that finds none
    /// free, throws `Closed`. Permits released afterwards can still be taken.
    func close() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            state.closed = true
            defer { state.waiters.removeAll() }
            return state.waiters.map(\.continuation)
        }
        for waiter in waiters { waiter.resume(throwing: Closed()) }
    }

    /// Takes a permit if one is free, without waiting.
    func tryAcquire() -> Bool {
        state.withLock { state in
            guard state.available > 0 else { return false }
            state.available -= 1
            return true
        }
    }

    func release() {
        release(1)
    }

    /// Returns `count` permits: waiters first, in order, the rest to the pool.
    func release(_ count: Int) {
        guard count > 0 else { return }
        let waiters = state.withLock { state -> [CheckedContinuation<Void, any Error>] in
            let woken = min(count, state.waiters.count)
            state.available += count - woken
            guard woken > 0 else { return [] }
            defer { state.waiters.removeFirst(woken) }
            return state.waiters.prefix(woken).map(\.continuation)
        }
        for waiter in waiters { waiter.resume() }
    }
}
