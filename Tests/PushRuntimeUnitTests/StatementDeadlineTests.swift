import PushStore
import Synchronization
import Testing

/// `withStatementDeadline`: the caller gets the statement's outcome, or an error at the
/// deadline when the statement never answers and ignores cancellation (what postgres-nio does
/// with a statement whose connection died as it was leased).
@Suite("Statement deadline")
struct StatementDeadlineTests {
    /// Continuations never resumed, kept alive so the runtime does not report them as leaked:
    /// the statements that hang for good.
    static let hung = Mutex<[CheckedContinuation<Int, Never>]>([])

    static func hangForever() async -> Int {
        await withCheckedContinuation { continuation in hung.withLock { $0.append(continuation) } }
    }

    @Test("a statement that answers in time: its value or its error")
    func answers() async throws {
        #expect(try await withStatementDeadline(.seconds(5)) { 42 } == 42)
        struct Refused: Error {}
        await #expect(throws: Refused.self) { try await withStatementDeadline(.seconds(5)) { () async throws -> Int in throw Refused() } }
    }

    @Test("a statement that never answers and ignores cancellation: the caller gets an error at the deadline")
    func hangs() async throws {
        let clock = ContinuousClock()
        let started = clock.now
        let error = await #expect(throws: StatementDeadlineExceeded.self) {
            try await withStatementDeadline(.milliseconds(200)) { await Self.hangForever() }
        }
        let waited = clock.now - started
        #expect(waited >= .milliseconds(200))
        #expect(waited < .seconds(10), "the caller waited \(waited)")
        #expect(error?.description == "PostgreSQL did not answer within 0.2 seconds")
    }

    @Test("the caller cancelled: it stops waiting at once, the statement is cancelled")
    func cancelled() async throws {
        let statementCancelled = Mutex(false)
        let caller = Task {
            try await withStatementDeadline(.seconds(60)) { () async throws -> Int in
                do {
                    try await Task.sleep(for: .seconds(60))
                } catch {
                    statementCancelled.withLock { $0 = true }
                    throw error
                }
                return 1
            }
        }
        try await Task.sleep(for: .milliseconds(100))
        caller.cancel()
        let clock = ContinuousClock()
        let started = clock.now
        await #expect(throws: CancellationError.self) { try await caller.value }
        #expect(clock.now - started < .seconds(10))
        for _ in 0..<100 where !statementCancelled.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(statementCancelled.withLock { $0 })
    }
}
