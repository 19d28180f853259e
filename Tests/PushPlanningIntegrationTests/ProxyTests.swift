import Foundation
import PushTestSupport
import Testing

/// The compose file's TLS proxy (deploy/proxy/Caddyfile, run by Debian's `caddy`, the same
/// configuration the compose file mounts into the `caddy` image) in front of the real `console`
/// and `registration` executables: HTTPS with a certificate of Caddy's internal CA made at first
/// start, HSTS, the console's cookie `Secure` because the proxy says the request came over TLS,
/// and `pushctl` reaching the admin API through it when told to trust that CA.
@Suite("The compose file's TLS proxy in front of the console and the admin API", .serialized)
struct ProxyTests {
    /// `curl` over HTTPS trusting `ca`: the status line and headers, then the body.
    static func curl(_ arguments: [String], ca: URL) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments = ["-sS", "-D", "-", "--cacert", ca.path, "--max-time", "20"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text
    }

    @Test("HTTPS from the internal CA made at first start, HSTS, a Secure session cookie, and pushctl through the proxy")
    func proxy() async throws {
        let caddy = URL(fileURLWithPath: "/usr/bin/caddy")
        try #require(FileManager.default.isExecutableFile(atPath: caddy.path), "no /usr/bin/caddy: scripts/stack install adds Debian's caddy")
        let suffix = PlanningHarness.makeSuffix()
        try await PlanningHarness.run(suffix: suffix, planner: false) { _ in
            let services = try await ConsoleServices.start(suffix: suffix, console: ["CONSOLE_SECURE_COOKIE": "false", "CONSOLE_TRUSTED_PROXIES": "127.0.0.1"])
            defer { services.stop() }

            let work = FileManager.default.temporaryDirectory.appendingPathComponent("proxy-\(suffix)", isDirectory: true)
            try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: work) }
            let (consolePort, catalogPort, deliveriesPort) = (try EphemeralPort.next(), try EphemeralPort.next(), try EphemeralPort.next())
            let proxy = Process()
            proxy.executableURL = caddy
            proxy.arguments = ["run", "--config", ConsoleBrowserTests.root.appendingPathComponent("deploy/proxy/Caddyfile").path, "--adapter", "caddyfile"]
            var environment = ProcessInfo.processInfo.environment
            for (name, value) in [
                ("XDG_DATA_HOME", work.appendingPathComponent("data").path), ("XDG_CONFIG_HOME", work.appendingPathComponent("config").path),
                ("PROXY_HOSTNAME", "localhost"), ("PROXY_CONSOLE_PORT", String(consolePort)), ("PROXY_CATALOG_API_PORT", String(catalogPort)),
                ("PROXY_DELIVERIES_API_PORT", String(deliveriesPort)), ("PROXY_CONSOLE_UPSTREAM", "127.0.0.1:\(services.consolePort)"),
                ("PROXY_CATALOG_API_UPSTREAM", "127.0.0.1:\(services.registrationPort)"),
            ] {
                environment[name] = value
            }
            proxy.environment = environment
            let log = work.appendingPathComponent("caddy.log")
            FileManager.default.createFile(atPath: log.path, contents: nil)
            let handle = try FileHandle(forWritingTo: log)
            proxy.standardOutput = handle
            proxy.standardError = handle
            try proxy.run()
            defer { if proxy.isRunning { proxy.terminate() } }
            let root = work.appendingPathComponent("data/caddy/pki/authorities/local/root.crt")
            func caddyLog() -> String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
            try await eventually(within: .seconds(30), "caddy made its CA and serves the console:\n\(caddyLog())") {
                FileManager.default.fileExists(atPath: root.path)
                    && ((try? Self.curl(["https://localhost:\(consolePort)/signin"], ca: root))?.hasPrefix("HTTP/2 200") ?? false)
            }

            // The sign-in page over HTTPS, with HSTS; the form's cookie comes back Secure.
            let page = try Self.curl(["https://localhost:\(consolePort)/signin"], ca: root)
            #expect(page.lowercased().contains("strict-transport-security: max-age=31536000"), "\(page.prefix(600))")
            let marker = #"name="form" value=""#
            let start = try #require(page.range(of: marker)?.upperBound, "the sign-in form")
            let formToken = String(page[start...].prefix { $0 != "\"" })
            let signedIn = try Self.curl(
                [
                    "https://localhost:\(consolePort)/signin", "--data-urlencode", "form=\(formToken)", "--data-urlencode", "next=/deliveries",
                    "--data-urlencode", "token=\(services.token)",
                ], ca: root)
            #expect(signedIn.hasPrefix("HTTP/2 303"), "\(signedIn.prefix(600))")
            let cookie = try #require(signedIn.split(separator: "\r\n").first { $0.lowercased().hasPrefix("set-cookie:") }, "\(signedIn.prefix(600))")
            #expect(cookie.contains("; Secure") && cookie.contains("HttpOnly"), "\(cookie)")
            // Not trusted without the CA: the certificate is the internal CA's, not a public one.
            let untrusted = Process()
            untrusted.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
            untrusted.arguments = ["-sS", "-o", "/dev/null", "--max-time", "20", "https://localhost:\(consolePort)/signin"]
            untrusted.standardError = FileHandle.nullDevice
            try untrusted.run()
            untrusted.waitUntilExit()
            #expect(untrusted.terminationStatus != 0, "curl without the CA refuses the certificate")

            // pushctl through the proxy, trusting its CA (docs/deploy.md). (Without it, the
            // client retries the handshake until its 30 s deadline: curl above shows the refusal.)
            var pushctl = services.environment
            pushctl["PUSH_ADMIN_URL"] = "https://localhost:\(catalogPort)"
            pushctl["PUSH_ADMIN_CA_FILE"] = root.path
            let listed = try await BuiltExecutable.run("pushctl", arguments: ["services", "list"], environment: pushctl)
            #expect(listed.status == 0, "\(listed.output)")
            #expect(listed.output.trimmingCharacters(in: .whitespacesAndNewlines).hasPrefix("["), "\(listed.output)")
            try? handle.close()
        }
    }
}
