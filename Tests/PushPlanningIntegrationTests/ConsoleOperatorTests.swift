import Foundation
import PushStore
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Named operators in the console, through the real `registration` and `console` executables
/// (docs/console.md, "Signing in"): an operator signs in with a password, sees only what its
/// role and services allow, acts under its own name in the audit trail, and its session ends at
/// sign-out (the copied cookie too) and at its deactivation.
@Suite("Named operators in the console", .serialized)
struct ConsoleOperatorTests {
    /// A browser without one: cookies kept by hand, redirects not followed (their `Location` is
    /// the answer).
    final class Client: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
        let base: URL
        var cookie: String?
        lazy var session = URLSession(configuration: .ephemeral, delegate: self, delegateQueue: nil)

        init(port: Int) {
            base = URL(string: "http://127.0.0.1:\(port)")!
        }

        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest,
            completionHandler: @escaping (URLRequest?) -> Void
        ) {
            completionHandler(nil)
        }

        struct Answer {
            var status: Int
            var body: String
            var location: String?
        }

        func send(_ method: String, _ path: String, form: [String: String]? = nil) async throws -> Answer {
            var request = URLRequest(url: URL(string: path, relativeTo: base)!)
            request.httpMethod = method
            request.httpShouldHandleCookies = false
            if let cookie { request.setValue(cookie, forHTTPHeaderField: "Cookie") }
            if let form {
                request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
                let encode = { (value: String) in value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value }
                request.httpBody = Data(form.map { "\(encode($0.key))=\(encode($0.value))" }.joined(separator: "&").utf8)
            }
            let (data, response) = try await session.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            if let set = http.value(forHTTPHeaderField: "Set-Cookie"), let pair = set.split(separator: ";").first {
                cookie = pair.hasSuffix("=") ? nil : String(pair)
            }
            return Answer(status: http.statusCode, body: String(decoding: data, as: UTF8.self), location: http.value(forHTTPHeaderField: "Location"))
        }

        /// The value of the first hidden input named `name` on `html`.
        static func hidden(_ name: String, in html: String) throws -> String {
            let marker = #"name="\#(name)" value=""#
            let start = try #require(html.range(of: marker)?.upperBound, "no \(name) on the page")
            return String(html[start...].prefix { $0 != "\"" })
        }

        func signIn(operator name: String, password: String) async throws -> Answer {
            let form = try Self.hidden("form", in: try await send("GET", "/signin").body)
            return try await send("POST", "/signin", form: ["form": form, "next": "/deliveries", "operator": name, "token": password])
        }
    }

    @Test("an operator signs in with its password; pages and forms follow its role and services; the audit names it; sign-out and deactivation end the session")
    func operators() async throws {
        let suffix = PlanningHarness.makeSuffix()
        try await PlanningHarness.run(suffix: suffix, planner: false) { h in
            let services = try await ConsoleServices.start(suffix: suffix)
            defer { services.stop() }
            let (registrationPort, consolePort, token) = (services.registrationPort, services.consolePort, services.token)

            // The bootstrap admin sets up two services and two operators with passwords.
            func admin(_ method: String, _ path: String, _ json: String) async throws -> Int {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(registrationPort)/admin/v1\(path)")!)
                request.httpMethod = method
                request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization")
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(json.utf8)
                let (_, response) = try await URLSession.shared.data(for: request)
                return (response as? HTTPURLResponse)?.statusCode ?? 0
            }
            let (own, other) = ("own-\(suffix)", "other-\(suffix)")
            for service in [own, other] { #expect(try await admin("POST", "/services", #"{"name": "\#(service)", "label": "L"}"#) == 201) }
            let (mia, sam) = ("mia-\(suffix)", "sam-\(suffix)")
            let password = "mia's long console password"
            #expect(try await admin("PUT", "/operators/\(mia)", #"{"role": "marketer", "services": ["\#(own)"]}"#) == 200)
            #expect(try await admin("PUT", "/operators/\(sam)", #"{"role": "support"}"#) == 200)
            for name in [mia, sam] { #expect(try await admin("PUT", "/operators/\(name)/password", #"{"password": "\#(password)"}"#) == 204) }

            // A wrong password: the form again, saying so, the name kept.
            let browser = Client(port: consolePort)
            let wrong = try await browser.signIn(operator: mia, password: "not her password")
            #expect(wrong.status == 401 && wrong.body.contains("wrong operator name or password") && wrong.body.contains(#"value="\#(mia)""#))
            #expect(browser.cookie == nil)

            // Mia, a marketer of one service: the deliveries and her catalog, not the audit nor devices.
            let signedIn = try await browser.signIn(operator: mia, password: password)
            #expect(signedIn.status == 303 && signedIn.location == "/deliveries", "\(signedIn.status) \(signedIn.body)")
            let cookie = try #require(browser.cookie)
            #expect(cookie.contains("=v2."))
            let deliveries = try await browser.send("GET", "/deliveries")
            #expect(deliveries.status == 200 && deliveries.body.contains("Signed in as \(mia) (marketer)"), "\(deliveries.status)")
            #expect(!deliveries.body.contains(#"href="/audit""#) && !deliveries.body.contains(#"href="/devices""#), "the navigation offers only her pages")
            let catalog = try await browser.send("GET", "/catalog")
            #expect(catalog.status == 200 && catalog.body.contains(own) && !catalog.body.contains(other), "only her service")
            let audit = try await browser.send("GET", "/audit")
            #expect(audit.status == 403 && audit.body.contains("Operator \(mia) (marketer) does not have permission operators"), "\(audit.status)")
            #expect(try await browser.send("GET", "/devices?q=x").status == 403)
            // A form of a permission she lacks is refused by the console before the admin API.
            let csrf = try Client.hidden("csrf", in: catalog.body)
            let create = try await browser.send("POST", "/catalog/services", form: ["csrf": csrf, "name": "new-\(suffix)", "label": "N"])
            #expect(create.status == 403 && create.body.contains("does not have permission catalog:write"), "\(create.status)")

            // Sam (support) may act on devices: his calls through the console carry his name.
            let support = Client(port: consolePort)
            #expect(try await support.signIn(operator: sam, password: password).status == 303)
            let devices = try await support.send("GET", "/devices")
            #expect(devices.status == 200 && devices.body.contains("Signed in as \(sam) (support)"))
            let supportCsrf = try Client.hidden("csrf", in: devices.body)
            let action = try await support.send(
                "POST", "/devices/action", form: ["csrf": supportCsrf, "action": "unsubscribe", "service": own, "token": "no-such-token-\(suffix)", "q": "x"])
            #expect([303, 409].contains(action.status), "\(action.status) \(action.body)")
            try await eventually("sam's unsubscribe in the audit log") {
                try await h.int(
                    "SELECT count(*)::int FROM push.audit_log WHERE operator_name = \(sam) AND path = \("/admin/v1/services/\(own)/unsubscribe")") == 1
            }
            #expect(
                try await h.int("SELECT count(*)::int FROM push.audit_log WHERE operator_name = \(sam) AND path = '/admin/v1/sessions' AND status = 201") == 1)

            // Sign-out revokes Mia's session token: the cookie copied before it no longer opens a page.
            let copied = Client(port: consolePort)
            copied.cookie = cookie
            #expect(try await copied.send("GET", "/deliveries").status == 200)
            let signOut = try await browser.send("POST", "/signout", form: ["csrf": try Client.hidden("csrf", in: deliveries.body)])
            #expect(signOut.status == 303 && signOut.location == "/signin")
            let after = try await copied.send("GET", "/deliveries")
            #expect(after.status == 303 && after.location?.hasPrefix("/signin") == true, "\(after.status) \(String(describing: after.location))")

            // Sam deactivated: his open session ends at his next page.
            #expect(try await support.send("GET", "/devices").status == 200)
            #expect(try await admin("PUT", "/operators/\(sam)", #"{"role": "support", "active": false}"#) == 200)
            let gone = try await support.send("GET", "/devices")
            #expect(gone.status == 303 && gone.location?.hasPrefix("/signin") == true, "\(gone.status)")

            // The admin token still signs in, as the bootstrap admin, with every page.
            let bootstrap = Client(port: consolePort)
            let form = try Client.hidden("form", in: try await bootstrap.send("GET", "/signin").body)
            #expect(try await bootstrap.send("POST", "/signin", form: ["form": form, "next": "/audit", "token": token]).status == 303)
            let auditPage = try await bootstrap.send("GET", "/audit")
            #expect(auditPage.status == 200 && auditPage.body.contains("Signed in as the admin token"))
            for process in services.processes {
                #expect(!process.log().contains(password), "a password is never logged")
            }
        }
    }
}

extension ConsoleOperatorTests {
    /// docs/console.md's table of the permission each page and form needs, as `METHOD /path`.
    static func documentedPermissions() throws -> [(route: String, permission: AdminPermission)] {
        let text = try String(contentsOf: ConsoleBrowserTests.root.appendingPathComponent("docs/console.md"), encoding: .utf8)
        var rows: [(String, AdminPermission)] = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `GET /") || line.hasPrefix("| `POST /") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "`")) }
            guard cells.count == 2, let permission = AdminPermission(rawValue: cells[1]) else { continue }
            rows.append((cells[0], permission))
        }
        return rows
    }

    @Test("the matrix: every console page and form, every role, as docs/console.md's table says; another service's app refused")
    func matrix() async throws {
        let routes = try Self.documentedPermissions()
        // Every route the console serves behind a session is in the table, and nothing else.
        #expect(
            Set(routes.map(\.route)) == [
                "GET /deliveries", "GET /deliveries/{id}", "GET /deliveries/{id}/report", "GET /deliveries/new", "POST /deliveries/new",
                "POST /deliveries/preview", "POST /deliveries/{id}/control", "GET /catalog", "GET /segments", "GET /catalog/apps/{id}",
                "POST /catalog/services",
                "POST /catalog/services/{name}/label", "POST /catalog/services/{name}/frequency-cap", "GET /catalog/services/{name}/apps/new",
                "POST /catalog/services/{name}/apps/new",
                "POST /catalog/apps/{id}", "POST /catalog/apps/{id}/credentials", "GET /devices", "POST /devices/action", "GET /audit", "POST /signout",
            ])
        let suffix = PlanningHarness.makeSuffix()
        try await PlanningHarness.run(suffix: suffix, planner: false) { _ in
            let services = try await ConsoleServices.start(suffix: suffix)
            defer { services.stop() }
            func admin(_ method: String, _ path: String, _ json: String) async throws -> (Int, [String: Any]) {
                var request = URLRequest(url: URL(string: "http://127.0.0.1:\(services.registrationPort)/admin/v1\(path)")!)
                request.httpMethod = method
                request.setValue("Bearer \(services.token)", forHTTPHeaderField: "Authorization")
                request.setValue("application/json", forHTTPHeaderField: "Content-Type")
                request.httpBody = Data(json.utf8)
                let (data, response) = try await URLSession.shared.data(for: request)
                return ((response as? HTTPURLResponse)?.statusCode ?? 0, (try? JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:])
            }
            let (own, other) = ("own-\(suffix)", "other-\(suffix)")
            var apps: [String: String] = [:]
            for service in [own, other] {
                #expect(try await admin("POST", "/services", #"{"name": "\#(service)", "label": "L"}"#).0 == 201)
                let (status, app) = try await admin("POST", "/services/\(service)/apps", #"{"platform": "android", "label": "A", "fcmProjectId": "p"}"#)
                #expect(status == 201)
                apps[service] = try #require(app["appId"] as? String)
            }
            let password = "the matrix's long password"
            var checked = 0
            for role in AdminRole.allCases {
                let name = "\(role.rawValue)-\(suffix)"
                #expect(try await admin("PUT", "/operators/\(name)", #"{"role": "\#(role.rawValue)", "services": ["\#(own)"]}"#).0 == 200)
                #expect(try await admin("PUT", "/operators/\(name)/password", #"{"password": "\#(password)"}"#).0 == 204)
                let browser = Client(port: services.consolePort)
                #expect(try await browser.signIn(operator: name, password: password).status == 303, "\(role) signs in")
                // Every signed-in page, a refused one too, carries the session's CSRF token.
                let csrf = try Client.hidden("csrf", in: try await browser.send("GET", "/audit").body)
                // The sign-out last: it ends the session.
                for (route, permission) in routes.sorted(by: { ($0.route == "POST /signout" ? 1 : 0) < ($1.route == "POST /signout" ? 1 : 0) }) {
                    let parts = route.split(separator: " ", maxSplits: 1).map(String.init)
                    let path = parts[1].replacingOccurrences(of: "{id}", with: route.contains("/apps/") ? apps[own]! : "no-such-delivery")
                        .replacingOccurrences(of: "{name}", with: own)
                    let answer = try await browser.send(parts[0], path, form: parts[0] == "POST" ? ["csrf": csrf] : nil)
                    let allowed = role.permissions.contains(permission)
                    if route == "POST /signout" {
                        #expect(answer.status == 303 && answer.location == "/signin", "\(role) signs out: \(answer.status)")
                    } else if allowed {
                        #expect(![403, 401].contains(answer.status) && answer.location?.hasPrefix("/signin") != true, "\(role) \(route): \(answer.status)")
                    } else {
                        #expect(answer.status == 403, "\(role) \(route): \(answer.status)")
                        if answer.status == 403 && !path.hasSuffix("/report") {
                            #expect(answer.body.contains("does not have permission \(permission.rawValue)"), "\(role) \(route) names the permission")
                        }
                    }
                    checked += 1
                }
                // Another service's app: refused for every role (limited to its own service).
                let again = Client(port: services.consolePort)
                _ = try await again.signIn(operator: name, password: password)
                let foreign = try await again.send("GET", "/catalog/apps/\(apps[other]!)")
                #expect(foreign.status == 403, "\(role): another service's app answered \(foreign.status)")
                if role.permissions.contains(.catalogRead) {
                    #expect(try await again.send("GET", "/catalog/apps/\(apps[own]!)").status == 200, "\(role): its own service's app")
                }
            }
            #expect(checked == routes.count * AdminRole.allCases.count)
        }
    }
}

/// The `registration` and `console` executables on topics and consumer groups of the run's own
/// (its catalog, subscriptions and audit topics), the console calling the registration's admin
/// API, the admin token a fresh one; bcrypt at cost 10 (the tests' passwords need no more).
struct ConsoleServices {
    var registrationPort: Int
    var consolePort: Int
    var token: String
    var environment: [String: String]
    var processes: [BuiltExecutable]

    static func start(suffix: String, console settings: [String: String] = [:]) async throws -> ConsoleServices {
        var environment = try PlanningHarness.environment(suffix: suffix)
        for (id, name) in [("SUBSCRIPTIONS", "subscriptions"), ("CATALOG", "catalog")] {
            environment["PUSH_TOPIC_\(id)"] = "test.\(name).\(suffix)"
            environment["PUSH_TOPIC_\(id)_PARTITIONS"] = "1"
        }
        for (variable, name) in [
            ("REGISTRATION_CATALOG_GROUP", "catalog"), ("REGISTRATION_SUBSCRIPTIONS_GROUP", "subscriptions"), ("REGISTRATION_AUDIT_GROUP", "audit"),
        ] {
            environment[variable] = "test.\(name).\(suffix)"
        }
        let token = "console-operators-\(UUID().uuidString.lowercased())"
        environment["PUSH_ADMIN_TOKEN"] = token
        environment["PUSH_OPS_HOST"] = "127.0.0.1"
        environment["REGISTRATION_BCRYPT_COST"] = "10"
        let topics = try await BuiltExecutable.run("pushctl", arguments: ["topics", "create"], environment: environment)
        try #require(topics.status == 0, "pushctl topics create: \(topics.output)")

        let (registrationPort, consolePort) = (try EphemeralPort.next(), try EphemeralPort.next())
        var started: [(BuiltExecutable, Int)] = []
        func start(_ name: String, _ settings: [String: String]) throws {
            var env = environment
            let opsPort = try EphemeralPort.next()
            env["PUSH_OPS_PORT"] = String(opsPort)
            for (key, value) in settings { env[key] = value }
            started.append((try BuiltExecutable(name, environment: env), opsPort))
        }
        let services = {
            ConsoleServices(
                registrationPort: registrationPort, consolePort: consolePort, token: token, environment: environment, processes: started.map(\.0))
        }
        do {
            try start("registration", ["REGISTRATION_HOST": "127.0.0.1", "REGISTRATION_PORT": String(registrationPort), "REGISTRATION_RATE_PER_ADDRESS": "0"])
            // No planner here: the deliveries' admin API calls get the registration's 404 at once,
            // rather than waiting out their deadline on a port nobody listens on.
            var console = [
                "CONSOLE_HOST": "127.0.0.1", "CONSOLE_PORT": String(consolePort), "CONSOLE_REGISTRATION_API_URL": "http://127.0.0.1:\(registrationPort)",
                "CONSOLE_DELIVERIES_API_URL": "http://127.0.0.1:\(registrationPort)",
            ]
            console.merge(settings) { _, new in new }
            try start("console", console)
            for (process, opsPort) in started {
                do {
                    try await process.waitUntilReady(port: opsPort, within: .seconds(90))
                } catch {
                    Issue.record("\(process) not ready:\n\(process.logTail(lines: 30))")
                    throw error
                }
            }
        } catch {
            services().stop()
            throw error
        }
        return services()
    }

    func stop() {
        for process in processes { process.killIfRunning() }
    }
}
