import Crypto
import Foundation
import Synchronization

/// The registrations waiting for their data key, served by shared statements: a registration
/// that finds fewer than `maximumStatements` serving runs statements itself, each for every
/// request waiting (its own included, at most `maximumBatch`); the others wait. Under load a
/// statement serves many registrations; alone, a registration waits for its own statement only.
/// Measured in docs/benchmarks.md ("End to end": the changes of the data-key statement).
///
/// The statements run in the registrations' own tasks, never in a task of their own: a
/// registration that serves stops once its own key is answered and hands the serving over to
/// the first one still waiting, which wakes up to serve (so no registration serves the others
/// for longer than its own wait, and nothing outlives the requests). The one handed over to is
/// taken out of the queue in the same step, so no other statement answers it meanwhile: every
/// waiting registration is woken exactly once, answered or asked to serve.
package final class SubjectKeyRequests: Sendable {
    package struct Subject: Hashable, Sendable {
        package var serviceId: UUID
        package var subject: String
    }

    package typealias Key = (id: UUID, key: SymmetricKey)

    /// What a waiting registration is woken for.
    enum Event: Sendable {
        case answered(Result<Key, any Error>)
        /// Its turn to run statements (a serving registration handed over), with its request,
        /// taken out of the queue.
        case serve(Entry)
    }

    /// One registration's request: woken for the event delivered, whether it waits already or
    /// not yet (one at a time: a request is in the queue, in a statement, or serving).
    final class Waiter: Sendable {
        let subject: Subject
        private let state = Mutex(State.idle)
        private enum State {
            case idle
            case waiting(CheckedContinuation<Event, Never>)
            case delivered(Event)
        }

        init(subject: Subject) { self.subject = subject }

        func next() async -> Event {
            await withCheckedContinuation { continuation in
                let ready: Event? = state.withLock { state in
                    if case .delivered(let event) = state {
                        state = .idle
                        return event
                    }
                    state = .waiting(continuation)
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        }

        /// Whether an event waits to be taken (its answer came while it was serving).
        var hasEvent: Bool {
            state.withLock { if case .delivered = $0 { true } else { false } }
        }

        func deliver(_ event: Event) {
            let waiting: CheckedContinuation<Event, Never>? = state.withLock { state in
                if case .waiting(let continuation) = state {
                    state = .idle
                    return continuation
                }
                state = .delivered(event)
                return nil
            }
            waiting?.resume(returning: event)
        }
    }

    struct Entry: Sendable {
        var waiter: Waiter
        /// Statements that ran for it without seeing its row (created meanwhile by another transaction).
        var misses = 0
    }

    private struct State {
        var waiting: [Entry] = []
        var serving = 0
    }

    private let state = Mutex(State())
    let maximumStatements: Int
    let maximumBatch: Int

    init(maximumStatements: Int, maximumBatch: Int = 500) {
        self.maximumStatements = max(1, maximumStatements)
        self.maximumBatch = maximumBatch
    }

    func key(_ subject: Subject, keys: PersonalDataKeys) async throws -> Key {
        let waiter = Waiter(subject: subject)
        var serve = state.withLock { state in
            state.waiting.append(Entry(waiter: waiter))
            guard state.serving < maximumStatements else { return false }
            state.serving += 1
            return true
        }
        while true {
            if serve { await self.serve(until: waiter, keys: keys) }
            switch await waiter.next() {
            case .answered(let result):
                return try result.get()
            case .serve(let entry):
                state.withLock { $0.waiting.insert(entry, at: 0) }
                serve = true
            }
        }
    }

    /// Runs statements for the requests waiting until `own` is answered (or none waits), then
    /// hands the serving over to the first request still waiting, or gives its place back.
    private func serve(until own: Waiter, keys: PersonalDataKeys) async {
        var answered = false
        // Until its own answer: from one of its statements, or from another serving
        // registration's (its request went back to the queue after a miss).
        while !answered && !own.hasEvent {
            let batch: [Entry] = state.withLock { state in
                let batch = Array(state.waiting.prefix(maximumBatch))
                state.waiting.removeFirst(batch.count)
                return batch
            }
            guard !batch.isEmpty else { break }
            let found: [Subject: Key]
            do {
                found = try await keys.keys(of: Array(Set(batch.map(\.waiter.subject))))
            } catch {
                for entry in batch { entry.waiter.deliver(.answered(.failure(error))) }
                answered = answered || batch.contains { $0.waiter === own }
                continue
            }
            var again: [Entry] = []
            for var entry in batch {
                if let key = found[entry.waiter.subject] {
                    entry.waiter.deliver(.answered(.success(key)))
                } else if entry.misses < 2 {
                    entry.misses += 1
                    again.append(entry)
                    continue
                } else {
                    entry.waiter.deliver(.answered(.failure(PersonalDataError("no data key could be created or read for the subject"))))
                }
                if entry.waiter === own { answered = true }
            }
            if !again.isEmpty { state.withLock { $0.waiting.insert(contentsOf: again, at: 0) } }
        }
        let next: Entry? = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.serving -= 1
                return nil
            }
            return state.waiting.removeFirst()
        }
        if let next { next.waiter.deliver(.serve(next)) }
    }
}
