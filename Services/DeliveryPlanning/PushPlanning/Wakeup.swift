import ServiceLifecycle
import Synchronization

/// A signal from one part of the planner to another that waits for work: the intake and the
/// fan-out raise it after a transaction that wrote what the waiter reads (a plan, outbox rows)
/// committed, and the waiter awaits it instead of polling the table with sleeps.
///
/// Signals do not add up: any number raised while nobody waits wake the next wait once, which
/// then reads everything there is. One waiter at a time.
package final class Wakeup: Sendable {
    private struct State {
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
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
            return waiter
        }
        waiter?.resume()
    }

    /// Returns on a signal (at once when one came since the last wait), or after `timeout`
    /// (the waiter's backstop for work no signal announces), or on cancellation or graceful
    /// shutdown (the caller's loop then ends).
    package func wait(atMost timeout: Duration) async {
        let signalled = state.withLock { state in
            defer { state.signalled = false }
            return state.signalled
        }
        if signalled { return }
        await withGracefulShutdownHandler {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.waitForSignal() }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
        } onGracefulShutdown: {
            self.signal()
        }
    }

    /// Suspends until `signal` or cancellation.
    private func waitForSignal() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let resumeNow = state.withLock { state -> Bool in
                    // Cancelled before the continuation was stored: `onCancel` found nothing
                    // to resume, so return now.
                    if state.signalled || Task.isCancelled {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume()
        }
    }
}
