import Foundation
import PushRegistration
import PushStore
import PushTestSupport
import Testing

/// Operators' console passwords and sessions on the registration's admin API, against the real
/// service, PostgreSQL and broker (docs/admin-api.md, "Console sign-in").
@Suite("Operators' passwords and console sessions", .serialized)
struct OperatorSignInTests {
    static func object(_ answer: RegistrationHarness.Answer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.status) \(answer.body)")
    }

    static func signIn(_ h: RegistrationHarness, _ name: String, _ password: String, minutes: Int = 60) async throws -> RegistrationHarness.Answer {
        let body = try JSONSerialization.data(withJSONObject: ["operator": name, "password": password, "minutes": minutes])
        return try await h.admin("POST", "/sessions", json: String(decoding: body, as: UTF8.self), token: nil)
    }

    @Test("a password is kept as a bcrypt hash; the right one opens a session token that the operator's role governs, sign-out and deactivation end it")
    func sessions() async throws {
        var settings = RegistrationSettings()
        settings.bcryptCost = 10
        try await RegistrationHarness.run(settings: settings) { h in
            let service = "svc-\(h.suffix)"
            #expect(try await h.admin("POST", "/services", json: #"{"name": "\#(service)", "label": "L"}"#).status == 201)
            let name = "ana@\(h.suffix).example"
            let password = "correct horse battery \(h.suffix)"
            #expect(try await h.admin("PUT", "/operators/\(name)", json: #"{"role": "analyst", "services": ["\#(service)"]}"#).status == 200)

            // Refusals name the problem; no password yet: no sign-in.
            let short = try await h.admin("PUT", "/operators/\(name)/password", json: #"{"password": "short"}"#)
            #expect(short.status == 400 && short.body.contains("a password is 12 to 72 bytes"), "\(short.body)")
            #expect(try await h.admin("PUT", "/operators/nobody-\(h.suffix)/password", json: #"{"password": "long enough password"}"#).status == 404)
            #expect(try await Self.signIn(h, name, password).status == 401)

            let set = try await h.admin("PUT", "/operators/\(name)/password", json: #"{"password": "\#(password)"}"#)
            #expect(set.status == 204, "\(set.body)")
            var hash = ""
            for try await text in try await h.postgres.query("SELECT password_hash FROM push.operators WHERE name = \(name)", logger: h.logger).decode(
                String.self)
            {
                hash = text
            }
            #expect(hash.hasPrefix("$2b$10$") && !hash.contains(password), "a bcrypt hash of cost 10, not the password")
            let listed = try Self.object(try await h.admin("GET", "/operators/\(name)"))
            #expect(listed["passwordSet"] as? Bool == true)
            #expect(!(try await h.admin("GET", "/operators")).body.contains(hash), "the list shows neither the password nor its hash")
            let records = try await h.records(h.configuration.topics.catalog.name)
            #expect(records.contains { String(decoding: $0.value, as: UTF8.self).contains("OperatorPasswordSet") })
            #expect(!records.contains { String(decoding: $0.value, as: UTF8.self).contains(password) }, "the password is in no event")

            // Wrong password and unknown operator: the same answer.
            let wrong = try await Self.signIn(h, name, "not the password at all")
            let unknown = try await Self.signIn(h, "nobody-\(h.suffix)", password)
            #expect(wrong.status == 401 && unknown.status == 401 && wrong.body == unknown.body, "\(wrong.body) / \(unknown.body)")
            #expect(wrong.body.contains("wrong operator name or password"))

            // The right one: a session token, 60 minutes, the operator's identity.
            let signedIn = try await Self.signIn(h, name, password)
            #expect(signedIn.status == 201, "\(signedIn.body)")
            let session = try Self.object(signedIn)
            let token = try #require(session["token"] as? String)
            let expires = try #require((session["expiresAt"] as? String).flatMap { try? Date($0, strategy: .iso8601) })
            #expect(abs(expires.timeIntervalSinceNow - 3_600) < 120)
            let identity = try #require(session["identity"] as? [String: Any])
            #expect(identity["name"] as? String == name && identity["role"] as? String == "analyst")
            #expect(identity["services"] as? [String] == [service])
            #expect(Set(identity["permissions"] as? [String] ?? []) == ["session", "catalog:read", "deliveries:read"])
            let me = try Self.object(try await h.admin("GET", "/session", token: token))
            #expect(me["name"] as? String == name && me["role"] as? String == "analyst")
            // Its role governs it as any token of the operator's.
            #expect(try await h.admin("GET", "/services/\(service)", token: token).status == 200)
            #expect(try await h.admin("PUT", "/services/\(service)", json: #"{"label": "X"}"#, token: token).status == 403)
            let tokens = try #require(try Self.object(try await h.admin("GET", "/operators/\(name)"))["tokens"] as? [[String: Any]])
            #expect(tokens.map { $0["purpose"] as? String } == ["session"])

            // Sign-out revokes it; the bootstrap token has no session to end.
            #expect(try await h.admin("DELETE", "/session", token: token).status == 204)
            #expect(try await h.admin("GET", "/session", token: token).status == 401)
            let bootstrap = try await h.admin("DELETE", "/session")
            #expect(bootstrap.status == 400 && bootstrap.body.contains("the bootstrap token is not a session"), "\(bootstrap.body)")

            // Deactivated: its open session is refused at once, and it cannot sign in again.
            let second = try #require(try Self.object(try await Self.signIn(h, name, password))["token"] as? String)
            #expect(try await h.admin("GET", "/session", token: second).status == 200)
            #expect(try await h.admin("PUT", "/operators/\(name)", json: #"{"role": "analyst", "active": false}"#).status == 200)
            #expect(try await h.admin("GET", "/session", token: second).status == 401)
            #expect(try await Self.signIn(h, name, password).status == 401)

            // The audit trail: the sign-ins of this operator (refused and accepted), its
            // sign-out, the password set; never the unknown name.
            let expected = ["PUT /admin/v1/operators/\(name)/password 204", "POST /admin/v1/sessions 401", "POST /admin/v1/sessions 201"]
            try await eventually("the sign-ins in the audit log") {
                try await h.count("SELECT count(*)::int FROM push.audit_log WHERE operator_name = \(name) AND path = '/admin/v1/sessions'") >= 5
            }
            var logged: [String] = []
            let rows = try await h.postgres.query(
                "SELECT method, path, status FROM push.audit_log WHERE operator_name = \(name) OR path LIKE \("%\(name)%") ORDER BY recorded_at",
                logger: h.logger)
            for try await (method, path, status) in rows.decode((String, String, Int).self) { logged.append("\(method) \(path) \(status)") }
            for entry in expected { #expect(logged.contains(entry), "\(entry) in \(logged)") }
            #expect(logged.contains("DELETE /admin/v1/session 204"), "\(logged)")
            #expect(logged.filter { $0 == "POST /admin/v1/sessions 401" }.count == 3, "no password, wrong, deactivated: \(logged)")
            #expect(try await h.count("SELECT count(*)::int FROM push.audit_log WHERE operator_name = \("nobody-\(h.suffix)")") == 0)
        }
    }

    @Test("wrong passwords lock the operator out (429, Retry-After), even for the right one, while another operator signs in")
    func lockout() async throws {
        var settings = RegistrationSettings()
        settings.bcryptCost = 10
        settings.signInMaxFailures = 3
        settings.signInLockoutSeconds = 120
        try await RegistrationHarness.run(settings: settings) { h in
            let (ana, bob) = ("ana-\(h.suffix)", "bob-\(h.suffix)")
            let password = "a long enough password"
            for name in [ana, bob] {
                #expect(try await h.admin("PUT", "/operators/\(name)", json: #"{"role": "support"}"#).status == 200)
                #expect(try await h.admin("PUT", "/operators/\(name)/password", json: #"{"password": "\#(password)"}"#).status == 204)
            }
            for attempt in 1...3 {
                #expect(try await Self.signIn(h, ana, "wrong password \(attempt)").status == 401)
            }
            let locked = try await Self.signIn(h, ana, password)
            #expect(locked.status == 429 && locked.body.contains("too many wrong passwords for this operator"), "\(locked.body)")
            #expect(locked.retryAfter.flatMap(Int.init).map { $0 > 60 && $0 <= 120 } == true, "\(String(describing: locked.retryAfter))")
            #expect(try await Self.signIn(h, bob, password).status == 201)

            // pushctl operators set-password reads the new one from standard input (never argv).
            let newPassword = "bob's new console password"
            let pushctl = Process()
            pushctl.executableURL = try BuiltExecutable.url("pushctl")
            pushctl.arguments = ["operators", "set-password", "--name", bob]
            var environment = TestStack.environment
            environment["PUSH_ADMIN_URL"] = h.baseURL.absoluteString
            environment["PUSH_ADMIN_TOKEN"] = RegistrationHarness.adminToken
            pushctl.environment = environment
            let (input, output) = (Pipe(), Pipe())
            pushctl.standardInput = input
            pushctl.standardOutput = output
            pushctl.standardError = output
            try pushctl.run()
            input.fileHandleForWriting.write(Data("\(newPassword)\n".utf8))
            try input.fileHandleForWriting.close()
            let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            pushctl.waitUntilExit()
            #expect(pushctl.terminationStatus == 0 && printed.contains("password set for operator \(bob)"), "\(printed)")
            #expect(try await Self.signIn(h, bob, password).status == 401)
            #expect(try await Self.signIn(h, bob, newPassword).status == 201)
            try await eventually("the lockout in the audit log") {
                try await h.count("SELECT count(*)::int FROM push.audit_log WHERE operator_name = \(ana) AND status = 429") == 1
            }
        }
    }
}
