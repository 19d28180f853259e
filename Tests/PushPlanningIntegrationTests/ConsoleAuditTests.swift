import Foundation
import PostgresNIO
import PushTestSupport
import Testing

@testable import PushConsole

/// The console's audit page reads `push.audit_log` (written by the registration service's audit
/// projection): its filters against the real table, rows inserted as the projection writes them.
@Suite("The console's audit trail", .serialized)
struct ConsoleAuditTests {
    @Test("the audit page's filters: operator, service, permission, a time window; newest first; at most the limit")
    func filters() async throws {
        try await PlanningHarness.run(planner: false) { h in
            let (alice, bob) = ("alice-\(h.suffix)", "bob-\(h.suffix)")
            let base = Date(timeIntervalSince1970: 1_795_000_000)  // 2026-11-18T...Z
            let rows: [(String, String, String, String, Int, String?, TimeInterval)] = [
                (alice, "POST", "/deliveries", "deliveries:write", 202, "trips", 0),
                (alice, "POST", "/deliveries/d1/cancel", "deliveries:write", 403, "news", 60),
                (alice, "GET", "/admin/v1/devices", "devices:read", 200, nil, 120),
                (bob, "PUT", "/admin/v1/services/trips", "catalog:write", 200, "trips", 180),
            ]
            for (index, row) in rows.enumerated() {
                try await h.postgres.query(
                    """
                    INSERT INTO push.audit_log (audit_id, recorded_at, operator_name, role, method, path, permission, status, request_id, service)
                    VALUES (\(UUID()), \(base.addingTimeInterval(row.6)), \(row.0), 'marketer', \(row.1), \(row.2), \(row.3), \(row.4), \("req-\(index)"), \(row.5))
                    """,
                    logger: h.logger)
            }
            let reports = ConsoleReports(postgres: h.postgres, logger: h.logger)
            func ids(_ filter: ConsoleReports.AuditFilter) async throws -> [String] { try await reports.audit(filter).map(\.requestId) }

            #expect(try await ids(.init(operatorName: alice)) == ["req-2", "req-1", "req-0"], "newest first")
            #expect(try await ids(.init(operatorName: alice, service: "trips")) == ["req-0"])
            #expect(try await ids(.init(operatorName: alice, permission: "deliveries:write")) == ["req-1", "req-0"])
            #expect(try await ids(.init(operatorName: alice, since: base.addingTimeInterval(60), until: base.addingTimeInterval(120))) == ["req-1"])
            #expect(try await ids(.init(operatorName: alice, limit: 2)) == ["req-2", "req-1"])
            #expect(try await ids(.init(operatorName: bob)) == ["req-3"])
            #expect(try await ids(.init(operatorName: "nobody-\(h.suffix)")).isEmpty)
            let refused = try #require(try await reports.audit(.init(operatorName: alice, service: "news")).first)
            #expect(refused.status == 403 && refused.method == "POST" && refused.path == "/deliveries/d1/cancel" && refused.role == "marketer")
            #expect(try await reports.audit(.init(operatorName: alice, permission: "devices:read")).first?.service == nil)

            let page = ConsolePages.audit(
                operatorName: alice, service: "", permission: "deliveries:write", since: "", until: "", problem: nil,
                entries: try await reports.audit(.init(operatorName: alice, permission: "deliveries:write")), limit: 200, csrf: "c")
            #expect(page.contains(#"<tr class="refused"><td>"#), "a refused call is marked")
            #expect(page.contains("<code>POST /deliveries/d1/cancel</code>"))
            #expect(page.contains(#"<option value="deliveries:write" selected>"#))
        }
    }
}
