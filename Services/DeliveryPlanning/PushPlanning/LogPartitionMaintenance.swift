import Foundation
import Logging
import PostgresNIO
import PushStore
import ServiceLifecycle

/// Keeps the month partitions of `push.broad_log`, `push.exclusion_log` and `push.tracking_log`:
/// at start and then every `interval` (an hour), creates this month's and the next two months'
/// partitions when missing, and drops the months older than `PUSH_LOG_RETENTION_DAYS` (when set).
/// Every planner instance runs it; `push.create_log_partition` serialises them and a drop that
/// finds its partition gone does nothing. A failure (PostgreSQL away, a lock not granted in
/// time) is logged and tried again at the next run: rows never wait for it, since a month
/// without its partition is held by the default partition.
///
/// Each run also deletes the throttled deliveries' timelines that are past
/// (`ThrottleTimelines.deletePast`: `push.delivery_throttle` rows whose `next_slot` is more than a
/// minute ago, the same as no row), so that the table holds only the deliveries sending lately,
/// and the `push.frequency_log` rows older than 31 days (no frequency cap looks further back).
package struct LogPartitionMaintenance: Service {
    let postgres: PostgresClient
    let retentionDays: Int
    let interval: Duration
    let logger: Logger

    package init(postgres: PostgresClient, retentionDays: Int, interval: Duration = .seconds(3_600), logger: Logger) {
        self.postgres = postgres
        self.retentionDays = retentionDays
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        // Cancelled (graceful shutdown) while asleep or mid-run: it simply returns.
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                await runOnce()
                try? await Task.sleep(for: interval)
            }
        }
    }

    /// One pass: creates the coming months, then applies the retention.
    package func runOnce() async {
        let partitions = LogPartitions(logger: logger)
        do {
            let (created, retention) = try await postgres.withConnection { connection in
                try await partitions.maintain(retentionDays: retentionDays, on: connection)
            }
            if !created.isEmpty {
                logger.info("Created log partitions", metadata: ["partitions": "\(created.joined(separator: ","))"])
            }
            if let retention, !retention.dropped.isEmpty || !retention.deletedFromDefault.isEmpty {
                logger.info(
                    "Applied the log retention",
                    metadata: [
                        "dropped": "\(retention.dropped.map(\.name).joined(separator: ","))",
                        "deleted_from_default": "\(retention.deletedFromDefault.values.reduce(0, +))",
                    ])
            }
        } catch is CancellationError {
        } catch {
            logger.warning("Log partition maintenance failed; trying again at the next run", metadata: ["error": "\(error)"])
        }
        do {
            let deleted = try await postgres.withConnection { try await ThrottleTimelines.deletePast(on: $0, logger: logger) }
            if deleted > 0 { logger.info("Deleted past throttle timelines", metadata: ["rows": "\(deleted)"]) }
        } catch is CancellationError {
        } catch {
            logger.warning("Deleting past throttle timelines failed; trying again at the next run", metadata: ["error": "\(error)"])
        }
        do {
            // The frequency caps look back at most 30 days (`FrequencyCap.periodHoursRange`).
            let deleted = try await postgres.withConnection { connection in
                try await connection.query(
                    "WITH gone AS (DELETE FROM push.frequency_log WHERE planned_at < now() - interval '31 days' RETURNING 1) SELECT count(*)::int FROM gone",
                    logger: logger
                ).decode(Int.self).reduce(0, +)
            }
            if deleted > 0 { logger.info("Deleted frequency-cap rows older than 31 days", metadata: ["rows": "\(deleted)"]) }
        } catch is CancellationError {
        } catch {
            logger.warning("Deleting old frequency-cap rows failed; trying again at the next run", metadata: ["error": "\(error)"])
        }
    }
}
