import Foundation
import Synchronization

/// A PostgreSQL statement that did not answer within its deadline (`withStatementDeadline`).
package struct StatementDeadlineExceeded: Error, CustomStringConvertible {
    package var limit: Duration
    package var description: String { "PostgreSQL did not answer within \(limit)" }
}

/// Runs `body` (statements through a `PostgresClient`) and waits for it at most `limit`.
///
/// Why a deadline, and why the statement is left behind past it: with postgres-nio 1.33.2 a
/// statement whose connection dies as it is leased (the server crashed or restarted) can stay
/// unanswered for good: the query is written to a channel that is already closed and its
/// future is never completed, and it does not observe task cancellation either. Reproduced
/// with 32 connections registering while `scripts/stack crash-pg 3.3` runs: about one run in
/// two left a registration without an answer and its process unable to shut down (the
/// server's graceful shutdown waits for the request's task; docs/registration.md, "Data keys").
/// A task group cannot give up on a child that never ends, so `body` runs in a task of its
/// own, which the caller stops waiting for at the deadline: a statement that did hang is left
/// to itself (a suspended task holding its connection's lease); one that was only slow
/// finishes unobserved. Only for statements whose outcome the caller does not need when it
/// gives up (a read, or a transaction whose effect is found again by the next attempt).
/// Cancelling the caller cancels the task and stops waiting at once.
package func withStatementDeadline<T: Sendable>(
    _ limit: Duration, _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    let waiter = DeadlineWaiter<T>()
    return try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            waiter.state.withLock { $0.continuation = continuation }
            let task = Task {
                do { waiter.finish(.success(try await body())) } catch { waiter.finish(.failure(error)) }
            }
            let timer = Task {
                try? await Task.sleep(for: limit)
                guard !Task.isCancelled else { return }
                waiter.finish(.failure(StatementDeadlineExceeded(limit: limit)))
            }
            let waiting = waiter.state.withLock { state in
                // `finish` may have run already (a statement that failed at once).
                guard state.continuation != nil else { return false }
                state.task = task
                state.timer = timer
                return true
            }
            if !waiting {
                timer.cancel()
            } else if Task.isCancelled {
                // Cancelled before the task and the timer were stored: `onCancel` found nothing.
                waiter.finish(.failure(CancellationError()))
            }
        }
    } onCancel: {
        waiter.finish(.failure(CancellationError()))
    }
}

/// The caller's continuation, resumed once: by the statement's task, the timer or a cancellation.
private final class DeadlineWaiter<T: Sendable>: Sendable {
    struct State {
        var continuation: CheckedContinuation<T, any Error>?
        var task: Task<Void, Never>?
        var timer: Task<Void, Never>?
    }
    let state = Mutex(State())

    func finish(_ result: Result<T, any Error>) {
        let taken = state.withLock { state in
            defer { state = State() }
            return state
        }
        taken.timer?.cancel()
        if case .failure = result { taken.task?.cancel() }
        taken.continuation?.resume(with: result)
    }
}
