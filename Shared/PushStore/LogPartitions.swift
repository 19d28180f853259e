import Foundation
import Logging
import PostgresNIO

/// The month partitions of `push.broad_log`, `push.exclusion_log` and `push.tracking_log`
/// (migration 18): listing them, creating the coming months' ahead of time, and dropping the
/// months older than the log retention (`PUSH_LOG_RETENTION_DAYS`) whole, without rewriting any
/// table. The delivery planner's `LogPartitionMaintenance` calls `maintain` every hour;
/// `pushctl logs` does the same on demand (docs/operations.md, "Log retention").
///
/// A row whose month has no partition still lands in the table's default partition; creating
/// that month's partition later moves it there (`push.create_log_partition`).
package struct LogPartitions: Sendable {
    /// The partitioned logs and their partition keys.
    package static let tables: [(table: String, key: String)] = [
        ("broad_log", "log_month"), ("exclusion_log", "log_month"), ("tracking_log", "occurred_at"),
    ]
    /// Months created ahead of the current one.
    package static let monthsAhead = 2
    /// The shortest retention the settings accept: a result may come as late as 35 days after
    /// its message was planned (28 days of validity, the longest FCM allows, and the message
    /// topics' 7 days of margin, docs/events.md); a shorter retention could drop a row whose
    /// result is still to come, and that result would count again in the indicators.
    package static let minimumRetentionDays = 35

    /// One partition as `pushctl logs partitions` shows it.
    package struct Partition: Sendable, Hashable {
        package var table: String
        package var name: String
        /// The UTC month `[from, to)` it holds; nil for the default partition or a partition
        /// whose name does not follow `<table>_pYYYYMM` (never dropped by the retention).
        package var from: Date?
        package var to: Date?
        package var isDefault: Bool
        /// Live rows, as PostgreSQL's statistics estimate them (`pg_stat_user_tables.n_live_tup`).
        package var estimatedRows: Int64
        package var bytes: Int64
    }

    /// What `applyRetention` did, or would do with `dryRun`.
    package struct RetentionOutcome: Sendable {
        package var cutoff: Date
        package var dropped: [Partition] = []
        /// Rows older than the cutoff deleted from the default partitions, per table.
        package var deletedFromDefault: [String: Int64] = [:]
    }

    package let logger: Logger

    package init(logger: Logger) {
        self.logger = logger
    }

    package static var utc: Calendar {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        return calendar
    }

    /// The month `[from, to)` a partition named `<table>_pYYYYMM` holds.
    package static func month(ofPartition name: String, table: String) -> (from: Date, to: Date)? {
        let prefix = table + "_p"
        guard name.hasPrefix(prefix) else { return nil }
        let digits = name.dropFirst(prefix.count)
        guard digits.count == 6, digits.allSatisfy(\.isASCII), let value = Int(digits) else { return nil }
        let year = value / 100
        let month = value % 100
        guard (1...12).contains(month), let from = utc.date(from: DateComponents(year: year, month: month, day: 1)),
            let to = utc.date(byAdding: .month, value: 1, to: from)
        else { return nil }
        return (from, to)
    }

    package func list(on connection: PostgresConnection) async throws -> [Partition] {
        let rows = try await connection.query(
            """
            SELECT p.relname::text, c.relname::text, c.relpartbound IS NOT NULL AND pg_get_expr(c.relpartbound, c.oid) = 'DEFAULT',
                   coalesce(s.n_live_tup, 0)::bigint, pg_total_relation_size(c.oid)::bigint
            FROM pg_inherits i
            JOIN pg_class c ON c.oid = i.inhrelid
            JOIN pg_class p ON p.oid = i.inhparent
            JOIN pg_namespace n ON n.oid = p.relnamespace
            LEFT JOIN pg_stat_user_tables s ON s.relid = c.oid
            WHERE n.nspname = 'push' AND p.relname = ANY(\(Self.tables.map(\.table)))
            ORDER BY p.relname, c.relname
            """,
            logger: logger
        )
        var partitions: [Partition] = []
        for try await (table, name, isDefault, estimated, bytes) in rows.decode((String, String, Bool, Int64, Int64).self) {
            let month = Self.month(ofPartition: name, table: table)
            partitions.append(
                Partition(table: table, name: name, from: month?.from, to: month?.to, isDefault: isDefault, estimatedRows: estimated, bytes: bytes))
        }
        return partitions
    }

    /// Creates the partitions of the month of `now` and of the `monthsAhead` next ones that do
    /// not exist yet. Returns the names created.
    @discardableResult
    package func createAhead(now: Date = Date(), monthsAhead: Int = LogPartitions.monthsAhead, on connection: PostgresConnection) async throws -> [String] {
        var created: [String] = []
        for offset in 0...max(0, monthsAhead) {
            guard let at = Self.utc.date(byAdding: .month, value: offset, to: now) else { continue }
            for (table, _) in Self.tables {
                let rows = try await connection.query("SELECT push.create_log_partition(\(table), \(at))", logger: logger)
                for try await made in rows.decode(Bool.self) where made {
                    created.append(Self.name(table: table, month: at))
                }
            }
        }
        return created
    }

    package static func name(table: String, month: Date) -> String {
        let parts = utc.dateComponents([.year, .month], from: month)
        return String(format: "%@_p%04d%02d", table, parts.year!, parts.month!)
    }

    /// Drops the month partitions that end at or before `now - retentionDays` and deletes the
    /// default partitions' rows older than that (rows a replay or a late event put there). Each
    /// drop is its own transaction and waits at most `lockTimeout` for the table (the
    /// projections keep writing; a drop that could not get its lock is left for the next run
    /// and reported in the error). The indicators (`push.delivery_indicator_counts`) and
    /// `push.tracking_firsts` are other tables: they keep the counts of the dropped rows.
    package func applyRetention(
        retentionDays: Int, now: Date = Date(), dryRun: Bool, lockTimeout: Duration = .seconds(5), on connection: PostgresConnection
    ) async throws -> RetentionOutcome {
        guard retentionDays > 0 else {
            throw LogPartitionError("the log retention must be a positive number of days (PUSH_LOG_RETENTION_DAYS); got \(retentionDays)")
        }
        let cutoff = now.addingTimeInterval(-Double(retentionDays) * 86_400)
        var outcome = RetentionOutcome(cutoff: cutoff)
        let milliseconds = lockTimeout.components.seconds * 1_000 + lockTimeout.components.attoseconds / 1_000_000_000_000_000
        for partition in try await list(on: connection) {
            if partition.isDefault {
                guard let key = Self.tables.first(where: { $0.table == partition.table })?.key else { continue }
                // Rows of a whole month older than the cutoff, as the month partitions dropped.
                let older = key == "log_month" ? "(log_month + interval '1 month')::timestamp AT TIME ZONE 'UTC' <= $1" : "\(key) < $1"
                if dryRun {
                    let rows = try await connection.query(
                        PostgresQuery(unsafeSQL: "SELECT count(*) FROM push.\(partition.name) WHERE \(older)", binds: binds(cutoff)), logger: logger)
                    for try await count in rows.decode(Int64.self) where count > 0 { outcome.deletedFromDefault[partition.table] = count }
                } else {
                    let deleted = try await connection.withTransaction(logger: logger) { connection in
                        try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = \(milliseconds)"), logger: logger)
                        let rows = try await connection.query(
                            PostgresQuery(
                                unsafeSQL: "WITH d AS (DELETE FROM push.\(partition.name) WHERE \(older) RETURNING 1) SELECT count(*) FROM d",
                                binds: binds(cutoff)),
                            logger: logger)
                        var count: Int64 = 0
                        for try await value in rows.decode(Int64.self) { count = value }
                        return count
                    }
                    if deleted > 0 { outcome.deletedFromDefault[partition.table] = deleted }
                }
                continue
            }
            guard let to = partition.to, to <= cutoff else { continue }
            if !dryRun {
                do {
                    try await connection.withTransaction(logger: logger) { connection in
                        try await connection.query(PostgresQuery(unsafeSQL: "SET LOCAL lock_timeout = \(milliseconds)"), logger: logger)
                        try await connection.query(PostgresQuery(unsafeSQL: "DROP TABLE push.\(partition.name)"), logger: logger)
                    }
                } catch let error as PSQLError where error.serverInfo?[.sqlState] == "55P03" {
                    throw LogPartitionError(
                        "could not lock push.\(partition.table) within \(lockTimeout) to drop \(partition.name); dropped so far: \(outcome.dropped.map(\.name))"
                    )
                }
                logger.info("Dropped a log partition", metadata: ["partition": "\(partition.name)", "cutoff": "\(cutoff)"])
            }
            outcome.dropped.append(partition)
        }
        return outcome
    }

    /// Creates the coming months' partitions, then applies the retention when there is one
    /// (`retentionDays` 0 keeps every row).
    package func maintain(retentionDays: Int, now: Date = Date(), on connection: PostgresConnection) async throws -> (
        created: [String], retention: RetentionOutcome?
    ) {
        let created = try await createAhead(now: now, on: connection)
        let retention = retentionDays > 0 ? try await applyRetention(retentionDays: retentionDays, now: now, dryRun: false, on: connection) : nil
        return (created, retention)
    }

    private func binds(_ date: Date) -> PostgresBindings {
        var bindings = PostgresBindings()
        bindings.append(date)
        return bindings
    }
}

/// A log partition operation that cannot be done; the description names the problem.
package struct LogPartitionError: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
