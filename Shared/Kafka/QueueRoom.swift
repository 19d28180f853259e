import Synchronization

/// Wakes the senders that found librdkafka's local queue full when delivery reports free room.
///
/// The fast path costs one atomic increment per delivery-report event (each carries many
/// records) and one atomic load; a continuation exists only while a sender actually waits.
final class QueueRoom: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var closed = false
    }

    private let state = Mutex(State())
    /// Delivery-report events seen so far.
    private let reports = Atomic<UInt64>(0)
    /// How many senders wait (kept equal to `waiters.count` under the lock, read without it).
    private let waiting = Atomic<Int>(0)

    /// Read before an enqueue attempt; handed to `wait(after:)` when the attempt found the queue full.
    var mark: UInt64 { reports.load(ordering: .sequentiallyConsistent) }

    /// Called on librdkafka's background thread after each delivery-report event.
    func reportsArrived() {
        reports.add(1, ordering: .sequentiallyConsistent)
        guard waiting.load(ordering: .sequentiallyConsistent) > 0 else { return }
        wakeAll()
    }

    /// Ends every wait, now and later (the producer is closing).
    func close() {
        state.withLock { $0.closed = true }
        wakeAll()
    }

    private func wakeAll() {
        let waiters = state.withLock { state in
            defer {
                state.waiters = [:]
                waiting.store(0, ordering: .sequentiallyConsistent)
            }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once a delivery report arrived after `mark` (room may have been freed), the
    /// producer closed or the task was cancelled. The caller tries again and checks why.
    func wait(after mark: UInt64) async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    if state.closed || Task.isCancelled { return true }
                    // Announce the wait before re-reading the count, so a report arriving
                    // in between either is seen here or sees this waiter.
                    waiting.add(1, ordering: .sequentiallyConsistent)
                    if reports.load(ordering: .sequentiallyConsistent) != mark {
                        waiting.subtract(1, ordering: .sequentiallyConsistent)
                        return true
                    }
                    state.waiters[id] = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let waiter = state.waiters.removeValue(forKey: id) else { return nil }
                waiting.subtract(1, ordering: .sequentiallyConsistent)
                return waiter
            }
            waiter?.resume()
        }
    }
}
