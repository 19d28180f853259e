/// The sends that must wait for something before they can finish: a provider or access token to
/// obtain, a resend on another connection, a paused FCM project. The provider clients' callback
/// `send` hands them back (`needsAsync`), the transport starts them here, and `MessageSender`
/// runs them as child tasks of its task group: none outlives the sender, and stopping waits for
/// them like for any send in flight.
///
/// Only these rare sends cost a task; the others finish in the clients' callbacks.
package final class WaitingSends: Sendable {
    package typealias Send = @Sendable () async -> Void

    private let sends: AsyncStream<Send>
    private let continuation: AsyncStream<Send>.Continuation

    init() {
        (self.sends, self.continuation) = AsyncStream.makeStream(of: Send.self)
    }

    /// Runs `send` in `run()`'s task group. A send started after `finish()` (the sender stopped,
    /// nothing waits for its outcome any more) does not run.
    package func start(_ send: @escaping Send) {
        self.continuation.yield(send)
    }

    /// Runs the sends started here, each in a child task, until `finish()` and the last of them
    /// has finished (or the task is cancelled, which cancels them).
    func run() async {
        await withDiscardingTaskGroup { group in
            for await send in self.sends {
                group.addTask { await send() }
            }
        }
    }

    /// No more sends: `run()` returns once the ones started have finished.
    func finish() {
        self.continuation.finish()
    }
}
