import Foundation
import PostgresNIO
import PushRuntime
import Testing

/// `ProjectionWait` against the real PostgreSQL: a waiter sees a projection's commit at once,
/// never a rolled-back one, and gives up at its timeout.
@Suite("Waiting for a projection to show a write", .serialized)
struct ProjectionWaitTests {
    @Test("the wait ends as soon as a transaction that notifies commits its row, long before the timeout; a check already true returns at once")
    func seesCommit() async throws {
        try await StoreTestSupport.withPostgres { postgres in
            let logger = StoreTestSupport.logger
            let wait = ProjectionWait(channel: "test_wait_\(UUID().uuidString.prefix(8).lowercased())")
            let table = "test_wait_\(UUID().uuidString.prefix(8).lowercased())"
            try await postgres.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (id int)"), logger: logger)
            defer { Task { try? await postgres.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"), logger: logger) } }
            let check: @Sendable (PostgresConnection) async throws -> Bool = { connection in
                for try await _ in try await connection.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(table)"), logger: logger) { return true }
                return false
            }
            let clock = ContinuousClock()
            let started = clock.now
            async let shown = wait.until(timeout: .seconds(20), postgres: postgres, logger: logger, check)
            try await Task.sleep(for: .milliseconds(300))
            try await postgres.withTransaction(logger: logger) { connection in
                try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (1)"), logger: logger)
                try await wait.notify(on: connection, logger: logger)
            }
            #expect(try await shown)
            let waited = clock.now - started
            #expect(waited < .seconds(5), "answered on the commit's notification, not at the timeout: \(waited)")

            let again = clock.now
            #expect(try await wait.until(timeout: .seconds(20), postgres: postgres, logger: logger, check))
            #expect(clock.now - again < .seconds(5))
        }
    }

    @Test("a rolled-back transaction's notification wakes nobody with its row; the wait ends false at its timeout")
    func rollbackAndTimeout() async throws {
        try await StoreTestSupport.withPostgres { postgres in
            let logger = StoreTestSupport.logger
            let wait = ProjectionWait(channel: "test_wait_\(UUID().uuidString.prefix(8).lowercased())")
            let table = "test_wait_\(UUID().uuidString.prefix(8).lowercased())"
            try await postgres.query(PostgresQuery(unsafeSQL: "CREATE TABLE \(table) (id int)"), logger: logger)
            defer { Task { try? await postgres.query(PostgresQuery(unsafeSQL: "DROP TABLE \(table)"), logger: logger) } }
            let clock = ContinuousClock()
            let started = clock.now
            async let shown = wait.until(timeout: .seconds(2), postgres: postgres, logger: logger) { connection in
                for try await _ in try await connection.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(table)"), logger: logger) { return true }
                return false
            }
            try await Task.sleep(for: .milliseconds(300))
            struct Rollback: Error {}
            await #expect(throws: (any Error).self) {
                try await postgres.withTransaction(logger: logger) { connection in
                    try await connection.query(PostgresQuery(unsafeSQL: "INSERT INTO \(table) VALUES (1)"), logger: logger)
                    try await wait.notify(on: connection, logger: logger)
                    throw Rollback()
                }
            }
            #expect(try await shown == false)
            #expect(clock.now - started >= .seconds(2))
        }
    }
}
