import Foundation
import PushEvents
import PushStore
import PushTestSupport
import Testing

/// Operators, their personal tokens and the permission every route of the registration's admin
/// API declares, against the real service, PostgreSQL and broker (docs/admin-api.md,
/// "Operators and roles").
@Suite("Operators and roles on the catalog and devices admin API", .serialized)
struct OperatorRolesTests {
    /// One route of the admin API: its method, its path (with `{own}` for the service's name or
    /// `{app}` for its app's id, replaced by the operator's own or the other service's), the
    /// permission it declares, and a body that is refused after the permission check (so that
    /// an allowed call changes nothing, or nothing another call needs).
    typealias Route = DocumentedRoute<AdminPermission>

    static let routes: [Route] = [
        Route(method: "GET", path: "/services", permission: .catalogRead, documented: "/admin/v1/services"),
        Route(method: "POST", path: "/services", permission: .catalogWrite, body: "{}", documented: "/admin/v1/services"),
        Route(method: "GET", path: "/services/{own}", permission: .catalogRead, documented: "/admin/v1/services/{name}"),
        Route(method: "PUT", path: "/services/{own}", permission: .catalogWrite, body: "{}", documented: "/admin/v1/services/{name}"),
        // 409 while the service has apps.
        Route(method: "DELETE", path: "/services/{own}", permission: .catalogWrite, documented: "/admin/v1/services/{name}"),
        Route(method: "GET", path: "/services/{own}/apps", permission: .catalogRead, documented: "/admin/v1/services/{name}/apps"),
        Route(method: "POST", path: "/services/{own}/apps", permission: .catalogWrite, body: "{}", documented: "/admin/v1/services/{name}/apps"),
        Route(method: "GET", path: "/apps", permission: .catalogRead, documented: "/admin/v1/apps"),
        Route(method: "GET", path: "/apps/{app}", permission: .catalogRead, documented: "/admin/v1/apps/{id}"),
        Route(method: "PUT", path: "/apps/{app}", permission: .catalogWrite, body: "{}", documented: "/admin/v1/apps/{id}"),
        // An app that does not exist (404 once allowed): deleting a real one would end the matrix.
        Route(method: "DELETE", path: "/apps/00000000-0000-4000-8000-000000000000", permission: .catalogWrite, documented: "/admin/v1/apps/{id}"),
        Route(method: "GET", path: "/apps/{app}/credentials", permission: .catalogRead, documented: "/admin/v1/apps/{id}/credentials"),
        Route(method: "PUT", path: "/apps/{app}/credentials", permission: .credentialsWrite, body: "{}", documented: "/admin/v1/apps/{id}/credentials"),
        Route(method: "GET", path: "/services/{own}/templates", permission: .catalogRead, documented: "/admin/v1/services/{name}/templates"),
        Route(
            method: "GET", path: "/services/{own}/templates/none", permission: .catalogRead, documented: "/admin/v1/services/{name}/templates/{template}"),
        Route(
            method: "PUT", path: "/services/{own}/templates/t", permission: .contentWrite, body: "[]",
            documented: "/admin/v1/services/{name}/templates/{template}"),
        Route(method: "GET", path: "/services/{own}/segments", permission: .catalogRead, documented: "/admin/v1/services/{name}/segments"),
        Route(
            method: "GET", path: "/services/{own}/segments/none", permission: .catalogRead, documented: "/admin/v1/services/{name}/segments/{segment}"),
        Route(
            method: "PUT", path: "/services/{own}/segments/s", permission: .contentWrite, body: "{}",
            documented: "/admin/v1/services/{name}/segments/{segment}"),
        Route(method: "GET", path: "/services/{own}/frequency-cap", permission: .catalogRead, documented: "/admin/v1/services/{name}/frequency-cap"),
        Route(
            method: "PUT", path: "/services/{own}/frequency-cap", permission: .contentWrite, body: "{}",
            documented: "/admin/v1/services/{name}/frequency-cap"),
        Route(method: "DELETE", path: "/services/{own}/frequency-cap", permission: .contentWrite, documented: "/admin/v1/services/{name}/frequency-cap"),
        Route(method: "GET", path: "/services/{own}/devices?userKey=nobody", permission: .devicesRead, documented: "/admin/v1/services/{name}/devices"),
        Route(method: "POST", path: "/services/{own}/unsubscribe", permission: .devicesWrite, body: "{}", documented: "/admin/v1/services/{name}/unsubscribe"),
        Route(method: "POST", path: "/services/{own}/resubscribe", permission: .devicesWrite, body: "{}", documented: "/admin/v1/services/{name}/resubscribe"),
        Route(method: "POST", path: "/services/{own}/erase", permission: .erasure, body: "{}", documented: "/admin/v1/services/{name}/erase"),
        Route(method: "POST", path: "/apps/{app}/quarantine/lift", permission: .devicesWrite, body: "{}", documented: "/admin/v1/apps/{id}/quarantine/lift"),
        Route(method: "GET", path: "/operators", permission: .operators, documented: "/admin/v1/operators"),
        Route(method: "GET", path: "/operators/nobody", permission: .operators, documented: "/admin/v1/operators/{name}"),
        Route(method: "PUT", path: "/operators/nobody", permission: .operators, body: "{}", documented: "/admin/v1/operators/{name}"),
        Route(method: "POST", path: "/operators/nobody/tokens", permission: .operators, body: "{}", documented: "/admin/v1/operators/{name}/tokens"),
        Route(
            method: "DELETE", path: "/operators/nobody/tokens/00000000-0000-4000-8000-000000000000", permission: .operators,
            documented: "/admin/v1/operators/{name}/tokens/{tokenId}"),
        Route(method: "PUT", path: "/operators/nobody/password", permission: .operators, body: "{}", documented: "/admin/v1/operators/{name}/password"),
        // The sign-in takes no bearer token (the one sent is ignored): a body without a name is 400.
        Route(method: "POST", path: "/sessions", permission: .session, body: "{}", documented: "/admin/v1/sessions"),
        Route(method: "GET", path: "/session", permission: .session, documented: "/admin/v1/session"),
        // Last: it revokes the token that calls it.
        Route(method: "DELETE", path: "/session", permission: .session, documented: "/admin/v1/session"),
    ]

    static func object(_ answer: RegistrationHarness.Answer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.status) \(answer.body)")
    }

    @Test("the matrix: every documented route, every role, the operator's own service and another: allowed or 403 as docs/admin-api.md says")
    func matrix() async throws {
        // Every route of docs/openapi.json is in the matrix, and nothing else.
        #expect(Set(Self.routes.map(\.operation)) == (try DocumentedOperations.of("openapi.json", pathPrefix: "/admin/v1/")))

        try await RegistrationHarness.run { h in
            let own = "own-\(h.suffix)"
            let other = "other-\(h.suffix)"
            var apps: [String: String] = [:]
            for service in [own, other] {
                #expect(try await h.admin("POST", "/services", json: #"{"name": "\#(service)", "label": "L"}"#).status == 201)
                let app = try await h.admin("POST", "/services/\(service)/apps", json: #"{"platform": "android", "label": "A", "fcmProjectId": "p"}"#)
                apps[service] = try #require(try Self.object(app)["appId"] as? String)
            }
            // One operator per role, limited to the own service; their tokens.
            var tokens: [AdminRole: String] = [:]
            for role in AdminRole.allCases {
                let name = "\(role.rawValue)-\(h.suffix)"
                let defined = try await h.admin("PUT", "/operators/\(name)", json: #"{"role": "\#(role.rawValue)", "services": ["\#(own)"]}"#)
                #expect(defined.status == 200, "\(defined.body)")
                let issued = try await h.admin("POST", "/operators/\(name)/tokens", json: #"{"expiresInDays": 1}"#)
                #expect(issued.status == 201, "\(issued.body)")
                let token = try #require(try Self.object(issued)["token"] as? String)
                #expect(token.hasPrefix("pat_"))
                tokens[role] = token
            }

            var checked = 0
            var audited: [String] = []
            for route in Self.routes {
                for role in AdminRole.allCases {
                    for (service, isOwn) in [(own, true), (other, false)] {
                        let path = route.path.replacingOccurrences(of: "{own}", with: service).replacingOccurrences(of: "{app}", with: apps[service]!)
                        let scoped = route.path.contains("{own}") || route.path.contains("{app}")
                        if !scoped && !isOwn { continue }
                        let answer = try await h.admin(route.method, path, json: route.body, token: tokens[role])
                        // A sign-in is recorded only for an operator it names (OperatorSignInTests).
                        if (route.method != "GET" || route.permission == .devicesRead) && route.path != "/sessions" {
                            audited.append("\(role.rawValue)-\(h.suffix) \(route.method) /admin/v1\(path.split(separator: "?")[0]) \(answer.status)")
                        }
                        let allowed = role.permissions.contains(route.permission) && (isOwn || !scoped)
                        if allowed {
                            #expect(![401, 403].contains(answer.status), "\(role) \(route) on \(isOwn ? "own" : "other"): \(answer.status) \(answer.body)")
                        } else {
                            #expect(answer.status == 403, "\(role) \(route) on \(isOwn ? "own" : "other"): \(answer.status) \(answer.body)")
                        }
                        checked += 1
                    }
                }
            }
            #expect(checked > 200)

            // The audit trail: exactly one entry per call that changed something or read devices,
            // allowed or refused, with the status answered; none for the other reads.
            let operators = AdminRole.allCases.map { "\($0.rawValue)-\(h.suffix)" }
            let expected = audited.sorted()
            try await eventually("the audit log has \(expected.count) entries") {
                try await h.count("SELECT count(*)::int FROM push.audit_log WHERE operator_name = ANY(\(operators))") >= expected.count
            }
            var logged: [String] = []
            let rows = try await h.postgres.query(
                "SELECT operator_name, method, path, status FROM push.audit_log WHERE operator_name = ANY(\(operators))", logger: h.logger)
            for try await (name, method, path, status) in rows.decode((String, String, String, Int).self) {
                logged.append("\(name) \(method) \(path) \(status)")
            }
            #expect(logged.sorted() == expected)
            #expect(expected.contains { $0.hasSuffix(" 403") } && expected.contains { $0.hasSuffix(" 400") })
            #expect(
                try await h.count(
                    "SELECT count(*)::int FROM push.audit_log WHERE operator_name = \("support-\(h.suffix)") AND service = \(own) AND permission = 'devices:read'"
                )
                    == 1)

            // Lists show only the services an operator may act on (a new token: the matrix's last
            // route ended the first).
            let analyst = try await h.admin("POST", "/operators/analyst-\(h.suffix)/tokens", json: "{}")
            let services = try await h.admin("GET", "/services", token: try Self.object(analyst)["token"] as? String)
            let names = try #require(try JSONSerialization.jsonObject(with: Data(services.body.utf8)) as? [[String: Any]]).compactMap { $0["name"] as? String }
            #expect(names.contains(own) && !names.contains(other))
            // The bootstrap token still acts on everything.
            #expect(try await h.admin("GET", "/services/\(other)").status == 200)
        }
    }

    @Test("a token is shown once and kept as a digest; revoked, or its operator deactivated, it is refused from the next request")
    func tokens() async throws {
        try await RegistrationHarness.run { h in
            let service = "svc-\(h.suffix)"
            #expect(try await h.admin("POST", "/services", json: #"{"name": "\#(service)", "label": "L"}"#).status == 201)
            let name = "ana@\(h.suffix).example"
            #expect(try await h.admin("PUT", "/operators/\(name)", json: #"{"role": "marketer"}"#).status == 200)
            let first = try Self.object(try await h.admin("POST", "/operators/\(name)/tokens", json: "{}"))
            let token = try #require(first["token"] as? String)
            let tokenId = try #require(first["tokenId"] as? String)
            let expires = try #require((first["expiresAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
            #expect(abs(expires.timeIntervalSinceNow - 90 * 86_400) < 120, "90 days by default")
            #expect(try await h.admin("GET", "/services/\(service)", token: token).status == 200)
            #expect(try await h.admin("GET", "/services/\(service)", token: token + "x").status == 401)
            #expect(try await h.admin("GET", "/services/\(service)", token: "pat_nothing").status == 401)

            // Listed without its secret; stored as the digest of its secret part only.
            let listed = try await h.admin("GET", "/operators/\(name)")
            #expect(listed.status == 200)
            #expect(!listed.body.contains(token) && !listed.body.contains(String(token.suffix(43))))
            let secret = String(token.suffix(43))
            #expect(try await h.count("SELECT count(*)::int FROM push.operator_tokens WHERE digest = \(secret)") == 0, "the secret itself is not stored")
            #expect(try await h.count("SELECT count(*)::int FROM push.operator_tokens WHERE digest = \(TokenDigest.of(secret))") == 1)
            #expect(try await h.count("SELECT count(*)::int FROM push.operators WHERE name = \(name) AND role = 'marketer'") == 1)
            // The catalog topic's events hold neither the token nor its secret part.
            let records = try await h.records(h.configuration.topics.catalog.name)
            #expect(records.contains { String(decoding: $0.value, as: UTF8.self).contains("OperatorTokenIssued") })
            #expect(!records.contains { String(decoding: $0.value, as: UTF8.self).contains(secret) })

            // Revoked: refused from the next request; another token of the same operator still works.
            let second = try #require(
                try Self.object(try await h.admin("POST", "/operators/\(name)/tokens", json: #"{"expiresInDays": 7}"#))["token"] as? String)
            #expect(try await h.admin("DELETE", "/operators/\(name)/tokens/\(tokenId)").status == 204)
            #expect(try await h.admin("GET", "/services/\(service)", token: token).status == 401)
            #expect(try await h.admin("GET", "/services/\(service)", token: second).status == 200)
            // Expired: refused (the expiry is the owner's row, moved into the past here).
            try await h.postgres.query(
                "UPDATE push.operator_tokens SET expires_at = now() - interval '1 second' WHERE operator_name = \(name) AND revoked_at IS NULL",
                logger: h.logger)
            #expect(try await h.admin("GET", "/services/\(service)", token: second).status == 401)
            let third = try #require(try Self.object(try await h.admin("POST", "/operators/\(name)/tokens", json: "{}"))["token"] as? String)
            #expect(try await h.admin("GET", "/services/\(service)", token: third).status == 200)
            // Deactivated: every token refused at once.
            #expect(try await h.admin("PUT", "/operators/\(name)", json: #"{"role": "marketer", "active": false}"#).status == 200)
            #expect(try await h.admin("GET", "/services/\(service)", token: third).status == 401)

            // Refusals name the problem.
            let badRole = try await h.admin("PUT", "/operators/bob", json: #"{"role": "owner"}"#)
            #expect(badRole.status == 400 && badRole.body.contains("role must be one of admin, marketer, analyst, support, privacy"), "\(badRole.body)")
            let badService = try await h.admin("PUT", "/operators/bob", json: #"{"role": "analyst", "services": ["nope-\#(h.suffix)"]}"#)
            #expect(badService.status == 400 && badService.body.contains("no service named nope-"), "\(badService.body)")
            let badName = try await h.admin("PUT", "/operators/a%20b", json: #"{"role": "analyst"}"#)
            #expect(badName.status == 400, "\(badName.body)")
            let badDays = try await h.admin("POST", "/operators/\(name)/tokens", json: #"{"expiresInDays": 400}"#)
            #expect(badDays.status == 400 && badDays.body.contains("between 1 and 365"), "\(badDays.body)")
        }
    }

    @Test("pushctl operators: set, issue-token, list, revoke-token; the token it printed works with pushctl until revoked")
    func commandLine() async throws {
        try await RegistrationHarness.run { h in
            let service = "cli-\(h.suffix)"
            #expect(try await h.admin("POST", "/services", json: #"{"name": "\#(service)", "label": "L"}"#).status == 201)
            let name = "support-\(h.suffix)"
            let defined = try await PushCtlAdminTests.pushctl(["operators", "set", "--name", name, "--role", "support", "--service", service], harness: h)
            #expect(defined.status == 0, "\(defined.output)")
            #expect(defined.output.contains("\"role\" : \"support\""), "\(defined.output)")
            let issued = try await PushCtlAdminTests.pushctl(["operators", "issue-token", "--name", name, "--expires-in-days", "7"], harness: h)
            #expect(issued.status == 0, "\(issued.output)")
            let object = try #require(PushCtlAdminTests.json(issued.output) as? [String: Any], "\(issued.output)")
            let token = try #require(object["token"] as? String)
            let tokenId = try #require(object["tokenId"] as? String)

            let listed = try await PushCtlAdminTests.pushctl(["services", "list"], harness: h, token: token)
            #expect(listed.status == 0 && listed.output.contains(service), "\(listed.output)")
            let refused = try await PushCtlAdminTests.pushctl(["operators", "list"], harness: h, token: token)
            #expect(refused.status != 0 && refused.output.contains("403") && refused.output.contains("does not have permission operators"), "\(refused.output)")
            let all = try await PushCtlAdminTests.pushctl(["operators", "list"], harness: h)
            #expect(all.output.contains(tokenId) && !all.output.contains(token), "\(all.output)")

            let revoked = try await PushCtlAdminTests.pushctl(["operators", "revoke-token", "--name", name, "--token-id", tokenId], harness: h)
            #expect(revoked.status == 0, "\(revoked.output)")
            let after = try await PushCtlAdminTests.pushctl(["services", "list"], harness: h, token: token)
            #expect(after.status != 0 && after.output.contains("401"), "\(after.output)")

            // pushctl audit: the revocation, by the bootstrap token, once projected.
            let path = "/admin/v1/operators/\(name)/tokens/\(tokenId)"
            try await eventually("the revocation in the audit log") {
                try await h.count("SELECT count(*)::int FROM push.audit_log WHERE path = \(path)") == 1
            }
            let audit = try await PushCtlAdminTests.pushctl(["audit", "--operator", "bootstrap", "--permission", "operators", "--limit", "1000"], harness: h)
            #expect(audit.status == 0, "\(audit.output)")
            #expect(audit.output.contains("bootstrap (admin) DELETE \(path) operators 204"), "\(audit.output)")
            #expect(!audit.output.contains(token))
        }
    }
}
