import Foundation
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The console's sign-in limit through the real `console` executable, behind a proxy it trusts
/// (`CONSOLE_TRUSTED_PROXIES`): the client address comes from `X-Forwarded-For`.
@Suite("Console sign-in attempts limited per client address", .serialized)
struct ConsoleSignInLimitTests {
    /// Posts the sign-in form (a fresh form token from `GET /signin`) as `client`, behind the proxy.
    static func signIn(port: Int, token: String, client: String) async throws -> (status: Int, retryAfter: String?, body: String, path: String?) {
        let base = try #require(URL(string: "http://127.0.0.1:\(port)"))
        let (page, _) = try await URLSession.shared.data(from: base.appendingPathComponent("signin"))
        let html = String(decoding: page, as: UTF8.self)
        let marker = #"name="form" value=""#
        let start = try #require(html.range(of: marker)?.upperBound, "the sign-in form has a form token")
        let formToken = String(html[start...].prefix { $0 != "\"" })
        var request = URLRequest(url: base.appendingPathComponent("signin"))
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded", forHTTPHeaderField: "Content-Type")
        request.setValue(client, forHTTPHeaderField: "X-Forwarded-For")
        let encode = { (value: String) in value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value }
        request.httpBody = Data("form=\(encode(formToken))&next=%2Fdeliveries&token=\(encode(token))".utf8)
        let session = URLSession(configuration: .ephemeral)
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, http.value(forHTTPHeaderField: "Retry-After"), String(decoding: data, as: UTF8.self), http.url?.path)
    }

    @Test("three wrong tokens from one client: the next attempt is refused 429 with Retry-After, even with the right token; another client signs in")
    func lockout() async throws {
        let token = "console-limit-token-\(UUID().uuidString)"
        let (port, opsPort) = (try EphemeralPort.next(), try EphemeralPort.next())
        var environment = ConsoleBrowserTests.consoleEnvironment(token: token, port: port, opsPort: opsPort)
        environment["CONSOLE_SIGNIN_MAX_FAILURES"] = "3"
        environment["CONSOLE_SIGNIN_LOCKOUT_SECONDS"] = "120"
        environment["CONSOLE_TRUSTED_PROXIES"] = "127.0.0.1"
        let console = try BuiltExecutable("console", environment: environment)
        defer { console.killIfRunning() }
        try await console.waitUntilReady(port: opsPort)

        for attempt in 1...3 {
            let refused = try await Self.signIn(port: port, token: "wrong-\(attempt)", client: "203.0.113.7")
            #expect(refused.status == 401 && refused.body.contains("wrong admin token"), "attempt \(attempt): \(refused.status)")
        }
        let locked = try await Self.signIn(port: port, token: token, client: "203.0.113.7")
        #expect(locked.status == 429, "\(locked.status)")
        #expect(locked.retryAfter.flatMap(Int.init).map { $0 > 60 && $0 <= 120 } == true, "Retry-After \(String(describing: locked.retryAfter))")
        #expect(locked.body.contains("too many failed sign-ins from this address"))
        // The proxy's other clients are not held: the right token signs in (to the deliveries page).
        let other = try await Self.signIn(port: port, token: token, client: "203.0.113.8")
        #expect(other.status == 200 && other.path == "/deliveries", "\(other.status) \(String(describing: other.path))")
        #expect(!console.log().contains(token), "the admin token is never logged")
    }
}
