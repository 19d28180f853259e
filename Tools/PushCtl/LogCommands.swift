import ArgumentParser
import Foundation
import PostgresNIO
import PushStore

/// `pushctl logs`: the month partitions of `broad_log`, `exclusion_log` and `tracking_log` and
/// their retention (docs/operations.md, "Log retention"). The delivery planner does the same
/// every hour; these commands do it now, or show what it would do.
struct Logs: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the log tables' month partitions, create the coming months', or drop the months older than the log retention.",
        subcommands: [Partitions.self, CreatePartitions.self, ApplyRetention.self]
    )

    static func describe(_ partition: LogPartitions.Partition) -> String {
        let range: String
        if partition.isDefault {
            range = "default"
        } else if let from = partition.from, let to = partition.to {
            range = "\(day(from)) .. \(day(to))"
        } else {
            range = "(not a month partition)"
        }
        return "\(partition.name.padding(toLength: 26, withPad: " ", startingAt: 0)) \(range.padding(toLength: 24, withPad: " ", startingAt: 0)) "
            + "~\(partition.estimatedRows) rows, \(partition.bytes / 1024) KiB"
    }

    static func day(_ date: Date) -> String {
        let parts = LogPartitions.utc.dateComponents([.year, .month, .day], from: date)
        return String(format: "%04d-%02d-%02d", parts.year!, parts.month!, parts.day!)
    }

    struct Partitions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List every partition of the three logs: its month (UTC, [from, to)), estimated rows and size.")

        func run() async throws {
            let context = try ToolContext()
            let logger = context.logger
            let partitions = try await context.withPostgres { client in
                try await client.withConnection { try await LogPartitions(logger: logger).list(on: $0) }
            }
            for partition in partitions { print(Logs.describe(partition)) }
            let days = context.configuration.logRetentionDays
            print(days > 0 ? "retention: \(days) days (PUSH_LOG_RETENTION_DAYS)" : "retention: forever (PUSH_LOG_RETENTION_DAYS unset or 0)")
        }
    }

    struct CreatePartitions: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "create-partitions",
            abstract: "Create this month's partitions and the next months' when missing (idempotent).")

        @Option(help: "Months to create after the current one.")
        var monthsAhead: Int = LogPartitions.monthsAhead

        func validate() throws {
            guard (0...120).contains(monthsAhead) else { throw ValidationError("--months-ahead must be between 0 and 120; got \(monthsAhead)") }
        }

        func run() async throws {
            let context = try ToolContext()
            let logger = context.logger
            let months = monthsAhead
            let created = try await context.withPostgres { client in
                try await client.withConnection { try await LogPartitions(logger: logger).createAhead(monthsAhead: months, on: $0) }
            }
            print(created.isEmpty ? "every partition exists" : created.map { "created \($0)" }.joined(separator: "\n"))
        }
    }

    struct ApplyRetention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apply-retention",
            abstract: "Drop the month partitions that end before now minus the retention, and the default partitions' older rows.",
            discussion: """
                The retention is PUSH_LOG_RETENTION_DAYS unless --days is given; with neither, nothing is dropped. Whole \
                partitions are dropped (no table is rewritten); the delivery indicators keep their counts.
                """
        )

        @Option(help: "Days to keep (default: PUSH_LOG_RETENTION_DAYS).")
        var days: Int?

        @Flag(help: "Print what would be dropped without dropping it.")
        var dryRun = false

        func validate() throws {
            if let days, !(LogPartitions.minimumRetentionDays...36_500).contains(days) {
                throw ValidationError(
                    "--days must be between \(LogPartitions.minimumRetentionDays) (a result can come that long after its message was planned) and 36500; got \(days)"
                )
            }
        }

        func run() async throws {
            let context = try ToolContext()
            let logger = context.logger
            let retention = days ?? context.configuration.logRetentionDays
            guard retention > 0 else {
                print("no log retention (PUSH_LOG_RETENTION_DAYS unset or 0, no --days): nothing to drop")
                return
            }
            let dryRun = self.dryRun
            let outcome = try await context.withPostgres { client in
                try await client.withConnection {
                    try await LogPartitions(logger: logger).applyRetention(retentionDays: retention, dryRun: dryRun, on: $0)
                }
            }
            let verb = dryRun ? "would drop" : "dropped"
            print("cutoff \(outcome.cutoff.formatted(.iso8601)) (\(retention) days)")
            for partition in outcome.dropped { print("\(verb) \(Logs.describe(partition))") }
            for (table, rows) in outcome.deletedFromDefault.sorted(by: { $0.key < $1.key }) {
                print("\(dryRun ? "would delete" : "deleted") \(rows) rows older than the cutoff from push.\(table)_default")
            }
            if outcome.dropped.isEmpty && outcome.deletedFromDefault.isEmpty { print("nothing older than the cutoff") }
        }
    }
}
