import ServiceLifecycle
import Synchronization

/// Wakes one waiting task: how a part of a service that waits for work awaits the event that
/// brings it instead of polling with sleeps. `signal()` ends the current `wait`, or the next one
/// if nobody waits (signals do not add up: any number raised meanwhile wake the next wait once,
/// which then reads everything there is). One task waits at a time.
///
/// Used by the planner (a delivery accepted, outbox rows committed) and the senders (a record
/// due earlier scheduled, the schedule closed).
package final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: (id: Int, continuation: CheckedContinuation<Void, Never>)?
        var nextId = 0
    }

    private let state = Mutex(State())

    package init() {}

    /// Wakes the waiter, or the next wait when nobody is waiting.
    package func signal() {
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

    /// Returns on a signal (at once when one came since the last wait), after `timeout` (nil:
    /// none; a waiter's backstop for work no signal announces, or a deadline), on cancellation,
    /// and, when `orGracefulShutdown`, once the service is asked to stop (the caller's loop then
    /// ends; a caller that goes on waiting while stopping must not ask for it, or it would spin).
    package func wait(atMost timeout: Duration?, orGracefulShutdown: Bool = false) async {
        if state.withLock({ state in
            defer { state.signalled = false }
            return state.signalled
        }) {
            return
        }
        guard orGracefulShutdown else { return await wait(timeout) }
        await withGracefulShutdownHandler {
            await wait(timeout)
        } onGracefulShutdown: {
            self.signal()
        }
    }

    private func wait(_ timeout: Duration?) async {
        guard let timeout else { return await waitForSignal() }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitForSignal() }
            group.addTask { try? await Task.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
    }

    /// Suspends until `signal` or cancellation (which forgets this wait).
    private func waitForSignal() async {
        let id = state.withLock { state in
            defer { state.nextId += 1 }
            return state.nextId
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state in
                    // Cancelled before the continuation was stored: `onCancel` found nothing
                    // to resume, so return now.
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
