import Synchronization

/// The producer tasks currently enqueueing into one librdkafka instance: the instance is
/// destroyed only once none is left, and its retirement awaits that moment.
final class ActiveSenders: Sendable {
    private struct State {
        var count = 0
        var drained: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())

    func enter() {
        state.withLock { $0.count += 1 }
    }

    func leave() {
        let drained = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.count -= 1
            guard state.count == 0 else { return nil }
            defer { state.drained = nil }
            return state.drained
        }
        drained?.resume()
    }

    /// Returns once no task enqueues any more (they notice a close or cancellation at their
    /// next record, or when their wait for room ends). One caller at a time.
    func drained() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.count == 0 { return true }
                state.drained = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }
}
