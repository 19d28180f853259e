import Crypto
import Foundation
import Synchronization

/// The registrations waiting for their data key, served by shared statements: a registration
/// that finds fewer than `maximumStatements` statements running starts one for every request
/// waiting (itself included, at most `maximumBatch`); the others wait for the next one. Under
/// load a statement serves many registrations; alone, a registration waits for its own statement
/// only, as before. Measured in docs/benchmarks.md (issue 25).
package final class SubjectKeyRequests: Sendable {
    package struct Subject: Hashable, Sendable {
        package var serviceId: UUID
        package var subject: String
    }

    private struct Waiter {
        var subject: Subject
        var continuation: CheckedContinuation<(id: UUID, key: SymmetricKey), any Error>
        /// Statements that ran for it without seeing its row (created meanwhile by another transaction).
        var misses = 0
    }

    private struct State {
        var waiting: [Waiter] = []
        var running = 0
    }

    private let state = Mutex(State())
    let maximumStatements: Int
    let maximumBatch: Int

    init(maximumStatements: Int, maximumBatch: Int = 500) {
        self.maximumStatements = max(1, maximumStatements)
        self.maximumBatch = maximumBatch
    }

    func key(_ subject: Subject, keys: PersonalDataKeys) async throws -> (id: UUID, key: SymmetricKey) {
        try await withCheckedThrowingContinuation { continuation in
            let start = state.withLock { state in
                state.waiting.append(Waiter(subject: subject, continuation: continuation))
                guard state.running < maximumStatements else { return false }
                state.running += 1
                return true
            }
            if start { Task { await self.serve(keys) } }
        }
    }

    /// Runs statements while registrations wait, then gives its place back.
    private func serve(_ keys: PersonalDataKeys) async {
        while true {
            let batch: [Waiter] = state.withLock { state in
                let batch = Array(state.waiting.prefix(maximumBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.running -= 1 }
                return batch
            }
            guard !batch.isEmpty else { return }
            let found: [Subject: (id: UUID, key: SymmetricKey)]
            do {
                found = try await keys.keys(of: Array(Set(batch.map(\.subject))))
            } catch {
                for waiter in batch { waiter.continuation.resume(throwing: error) }
                continue
            }
            var again: [Waiter] = []
            for var waiter in batch {
                if let key = found[waiter.subject] {
                    waiter.continuation.resume(returning: key)
                } else if waiter.misses < 2 {
                    waiter.misses += 1
                    again.append(waiter)
                } else {
                    waiter.continuation.resume(throwing: PersonalDataError("no data key could be created or read for the subject"))
                }
            }
            if !again.isEmpty { state.withLock { $0.waiting.insert(contentsOf: again, at: 0) } }
        }
    }
}
