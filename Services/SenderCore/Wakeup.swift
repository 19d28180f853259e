import Synchronization

/// Wakes one waiting task: `signal()` ends the current `wait`, or the next one if none is waiting
/// (a signal is remembered until then, and several signals count as one). The sender's schedule
/// waits on it for "a record due earlier was scheduled, or the sender stops" (`MessageSender`).
final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var nextId = 0
    }

    private let state = Mutex(State())

    init() {}

    func signal() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard let waiter = state.waiter else {
                state.signalled = true
                return nil
            }
            state.waiter = nil
            return waiter.continuation
        }
        waiter?.resume()
    }

    /// Returns when signalled, when `timeout` has passed (nil: no timeout) or when the task is
    /// cancelled. One task waits at a time.
    func wait(timeout: Duration?) async {
        if state.withLock({ state in defer { state.signalled = false }; return state.signalled }) { return }
        guard let timeout else { return await waitForSignal() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { try? await Task.sleep(for: timeout) }
            group.addTask { await self.waitForSignal() }
            await group.next()
            group.cancelAll()
        }
    }

    /// Waits for a signal; returns early, and forgets the wait, if the task is cancelled.
    private func waitForSignal() async {
        let id = state.withLock { state in
            defer { state.nextId += 1 }
            return state.nextId
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    precondition(state.waiter == nil, "one task waits on a Wakeup at a time")
                    state.waiter = (id, continuation)
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiter, waiter.id == id else { return nil }
                state.waiter = nil
                return waiter.continuation
            }
            waiter?.resume()
        }
    }
}
