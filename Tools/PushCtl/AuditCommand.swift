import ArgumentParser
import Foundation
import Logging
import PostgresNIO

/// `pushctl audit`: the admin APIs' audit trail (`push.audit_log`, docs/admin-api.md, "Audit
/// trail"), newest first, filtered by operator, service, permission and time.
struct Audit: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print who did what through the admin APIs (push.audit_log), newest first.",
        discussion: "One line per call that changed something or read devices: time, operator (role), method, path, permission, status, request id."
    )

    @Option(help: "Only this operator's calls (bootstrap: PUSH_ADMIN_TOKEN's).") var `operator`: String?
    @Option(help: "Only calls about this service.") var service: String?
    @Option(help: "Only calls needing this permission (erasure, deliveries:write, ...).") var permission: String?
    @Option(help: "Only calls at or after this ISO 8601 time.") var since: String?
    @Option(help: "At most this many lines (1-10000).") var limit: Int = 100

    func validate() throws {
        guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be between 1 and 10000") }
        if let since, (try? Date(since, strategy: .iso8601)) == nil { throw ValidationError("--since must be an ISO 8601 time (2026-11-30T09:00:00Z)") }
    }

    func run() async throws {
        let context = try ToolContext()
        let logger = context.logger
        let since = self.since.flatMap { try? Date($0, strategy: .iso8601) }
        let (name, service, permission, limit) = (self.operator, self.service, self.permission, self.limit)
        let lines = try await context.withPostgres { client in
            let rows = try await client.query(
                """
                SELECT recorded_at, operator_name, role, method, path, permission, status, request_id
                FROM push.audit_log
                WHERE (\(name)::text IS NULL OR operator_name = \(name)) AND (\(service)::text IS NULL OR service = \(service))
                  AND (\(permission)::text IS NULL OR permission = \(permission)) AND (\(since)::timestamptz IS NULL OR recorded_at >= \(since))
                ORDER BY recorded_at DESC, audit_id
                LIMIT \(limit)
                """,
                logger: logger)
            var lines: [String] = []
            for try await (at, name, role, method, path, permission, status, requestId) in rows.decode(
                (Date, String, String, String, String, String, Int, String).self)
            {
                lines.append("\(at.formatted(.iso8601)) \(name) (\(role)) \(method) \(path) \(permission) \(status) \(requestId)")
            }
            return lines
        }
        for line in lines { print(line) }
    }
}
