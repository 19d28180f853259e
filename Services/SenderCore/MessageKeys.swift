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
    let logger: Logger

    package init(postgres: PostgresClient, logger: Logger) {
        self.postgres = postgres
        self.logger = logger
    }

    /// The keys of `subjects` that exist. PostgreSQL unreachable: tried again every second until
    /// it answers or the task is cancelled (the batch waits; nothing is sent without its key).
    package func keys(of subjects: Set<UUID>) async throws -> [UUID: [UInt8]] {
        guard !subjects.isEmpty else { return [:] }
        while true {
            do {
                return try await SubjectKeys.keys(subjects, postgres: postgres, logger: logger)
            } catch {
                try Task.checkCancellation()
                logger.warning("Reading the data keys of a batch failed; trying again in 1 s", metadata: ["error": "\(error)"])
                try await Task.sleep(for: .seconds(1))
            }
        }
    }
}
