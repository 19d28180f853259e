import Foundation
import Logging
import PostgresNIO
import PushStore

/// The data keys that open sealed message records (version 2; docs/senders.md, "Sealed
/// records"): read from `push.subject_keys` once per fetched batch, for the subjects its sealed
/// records name, and never cached (an erasure must stop the sends of messages planned before
/// it, whichever instance holds them). A subject without a row was erased: its messages end
/// `failed`, reason `erased`, without a send.
package struct MessageKeys: Sendable {
    let postgres: PostgresClient
    /// Opens keys wrapped under the key-encryption key (`PUSH_DATA_KEYS_KEY`).
    let wrapping: (any DataKeyWrapping)?
    /// How long one read may wait: a statement can go unanswered for good (a server stopped, a
    /// connection cut without a reset or lost as it was leased: `withStatementDeadline`), and
    /// the lane's reading would stop there.
    let statementDeadline: Duration
    let logger: Logger

    package init(postgres: PostgresClient, wrapping: (any DataKeyWrapping)?, statementDeadline: Duration = .seconds(10), logger: Logger) {
        self.postgres = postgres
        self.wrapping = wrapping
        self.statementDeadline = statementDeadline
        self.logger = logger
    }

    /// The keys of `subjects` that exist. PostgreSQL unreachable, or not answering within
    /// `statementDeadline`: tried again every second until it answers or the task is cancelled
    /// (the batch waits; nothing is sent without its key).
    package func keys(of subjects: Set<UUID>) async throws -> [UUID: [UInt8]] {
        guard !subjects.isEmpty else { return [:] }
        while true {
            do {
                return try await withStatementDeadline(statementDeadline) { [postgres, wrapping, logger] in
                    try await SubjectKeys.keys(subjects, wrapping: wrapping, postgres: postgres, logger: logger)
                }
            } catch let error as DataKeyUnwrapError {
                // Not a passing failure: the process lacks the key-encryption key. Said loudly, then tried again.
                logger.error("A data key of a batch cannot be unwrapped; trying again in 5 s", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .seconds(5))
            } catch {
                try Task.checkCancellation()
                logger.warning("Reading the data keys of a batch failed; trying again in 1 s", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}
