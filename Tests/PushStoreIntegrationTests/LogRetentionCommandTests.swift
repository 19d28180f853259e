import Foundation
import Logging
import PostgresNIO
import PushStore
import PushTestSupport
import Testing

/// `pushctl logs partitions`, `create-partitions` and `apply-retention`, the real executable on
/// a scratch database of the test server (dropped at the end): what an operator runs from the
/// runbook (docs/operations.md, "Log retention").
@Suite("pushctl logs: partitions and retention")
struct LogRetentionCommandTests {
    @Test(
        "lists the months; a dry run drops nothing; apply drops the months older than PUSH_LOG_RETENTION_DAYS or --days whole; bad values are refused by name")
    func commands() async throws {
        try await StoreTestSupport.withScratchDatabase("push_test_logcmd") { client, database in
            var environment = TestStack.environment
            var components = try #require(environment["POSTGRES_URL"].flatMap(URLComponents.init(string:)))
            components.path = "/\(database)"
            environment["POSTGRES_URL"] = try #require(components.string)
            let logger = StoreTestSupport.logger
            func pushctl(_ arguments: [String], _ extra: [String: String] = [:]) async throws -> (status: Int32, output: String) {
                let run = try await BuiltExecutable.run("pushctl", arguments: arguments, environment: environment.merging(extra) { _, new in new })
                return (run.status, run.output)
            }
            #expect(try await pushctl(["migrate"]).status == 0)
            // A delivery of three years ago (its month has no partition: the default holds it).
            let old = Date().addingTimeInterval(-3 * 365 * 86_400)
            let month = LogPartitions.name(table: "broad_log", month: old)
            try await client.query(
                """
                INSERT INTO push.broad_log (message_id, delivery_id, app_id, registration_token, token_digest, platform, status, attempts, created_at, updated_at,
                                            log_month)
                VALUES (gen_random_uuid(), 'old', gen_random_uuid(), 't', push.token_digest('t'), 'ios', 'sent', 1, \(old), \(old), date_trunc('month', \(old) AT TIME ZONE 'UTC')::date)
                """,
                logger: logger)
            func count() async throws -> Int {
                for try await n in try await client.query("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = 'old'", logger: logger)
                    .decode(Int.self)
                {
                    return n
                }
                return -1
            }

            let listed = try await pushctl(["logs", "partitions"])
            #expect(listed.status == 0, "\(listed.output)")
            #expect(listed.output.contains(LogPartitions.name(table: "tracking_log", month: Date())), "\(listed.output)")
            #expect(listed.output.contains("broad_log_default          default"), "\(listed.output)")
            #expect(listed.output.contains("retention: forever"), "\(listed.output)")
            #expect(!listed.output.contains(month), "\(listed.output)")

            // The coming months exist already; the old month made on demand (as the planner or
            // pushctl would for a month they reach), its row moving out of the default.
            let created = try await pushctl(["logs", "create-partitions", "--months-ahead", "0"])
            #expect(created.output.contains("every partition exists"), "\(created.output)")
            try await client.withConnection { _ = try await LogPartitions(logger: logger).createAhead(now: old, monthsAhead: 0, on: $0) }
            #expect((try await pushctl(["logs", "partitions"])).output.contains(month))

            let none = try await pushctl(["logs", "apply-retention"])
            #expect(none.status == 0 && none.output.contains("no log retention"), "\(none.output)")

            let dry = try await pushctl(["logs", "apply-retention", "--dry-run"], ["PUSH_LOG_RETENTION_DAYS": "365"])
            #expect(dry.status == 0, "\(dry.output)")
            #expect(dry.output.contains("would drop \(month)"), "\(dry.output)")
            #expect(try await count() == 1)

            let applied = try await pushctl(["logs", "apply-retention"], ["PUSH_LOG_RETENTION_DAYS": "365"])
            #expect(applied.status == 0, "\(applied.output)")
            #expect(applied.output.contains("dropped \(month)"), "\(applied.output)")
            #expect(!applied.output.contains(LogPartitions.name(table: "broad_log", month: Date())), "this month stays")
            #expect(try await count() == 0)
            let again = try await pushctl(["logs", "apply-retention", "--days", "365"])
            #expect(again.output.contains("nothing older than the cutoff"), "\(again.output)")

            let zero = try await pushctl(["logs", "apply-retention", "--days", "0"])
            #expect(
                zero.status != 0
                    && zero.output.contains("--days must be between 35 (a result can come that long after its message was planned) and 36500; got 0"),
                "\(zero.output)")
            let bad = try await pushctl(["logs", "partitions"], ["PUSH_LOG_RETENTION_DAYS": "a year"])
            #expect(bad.status != 0 && bad.output.contains("PUSH_LOG_RETENTION_DAYS"), "\(bad.output)")
            let short = try await pushctl(["logs", "partitions"], ["PUSH_LOG_RETENTION_DAYS": "30"])
            #expect(short.status != 0 && short.output.contains("PUSH_LOG_RETENTION_DAYS must be 0 (keep every row) or at least 35"), "\(short.output)")
        }
    }
}
