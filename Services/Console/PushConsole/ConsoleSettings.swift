import Foundation
import PushRuntime

/// Settings of the console service (docs/configuration.md, docs/console.md).
package struct ConsoleSettings: Sendable {
    /// `CONSOLE_HOST` / `CONSOLE_PORT`: where the console's pages listen. Default `0.0.0.0:8083`;
    /// port `0` lets the system choose (tests).
    package var host: String
    package var port: Int
    /// `CONSOLE_SESSION_MINUTES`: how long a sign-in lasts (the signed cookie's expiry).
    /// Default 480 (a working day).
    package var sessionMinutes: Int
    /// `CONSOLE_SECURE_COOKIE`: `true` marks the session cookie `Secure` whatever the request
    /// says; otherwise it is `Secure` when the request came over TLS (`X-Forwarded-Proto: https`
    /// from the proxy that terminates it). Default `false`.
    package var secureCookie: Bool
    /// `CONSOLE_REFRESH_SECONDS`: how often a running delivery's report page refreshes itself.
    /// Default 5.
    package var refreshSeconds: Int
    /// `CONSOLE_DELIVERIES_API_URL`: the deliveries' admin API (delivery-planning's
    /// `PLANNER_ADMIN_PORT`) the console cancels, pauses and resumes through. Default
    /// `http://127.0.0.1:8082`.
    package var deliveriesAPIURL: String
    /// `CONSOLE_REGISTRATION_API_URL`: the catalog's admin API (the registration service's
    /// `REGISTRATION_PORT`) the console's catalog forms write through. Default
    /// `http://127.0.0.1:8080`.
    package var registrationAPIURL: String
    /// `CONSOLE_SIGNIN_MAX_FAILURES`: wrong admin tokens one client address may type within
    /// `CONSOLE_SIGNIN_LOCKOUT_SECONDS` before it is refused until that time has passed since its
    /// first. Default 5; 0 disables the limit.
    package var signInMaxFailures: Int = 5
    /// `CONSOLE_SIGNIN_LOCKOUT_SECONDS`: the window of those failures, and so the longest
    /// lockout. Default 900 (15 minutes).
    package var signInLockoutSeconds: Int = 900
    /// `CONSOLE_TRUSTED_PROXIES`: addresses of the reverse proxies in front of the console
    /// (comma-separated); a request from one of them is counted against the address it names in
    /// `X-Forwarded-For` (`ClientAddress`). Default none: the socket's peer.
    package var trustedProxies: Set<String> = []

    package init(
        host: String = "0.0.0.0", port: Int = 8083, sessionMinutes: Int = 480, secureCookie: Bool = false, refreshSeconds: Int = 5,
        deliveriesAPIURL: String = "http://127.0.0.1:8082", registrationAPIURL: String = "http://127.0.0.1:8080"
    ) {
        self.host = host
        self.port = port
        self.sessionMinutes = sessionMinutes
        self.secureCookie = secureCookie
        self.refreshSeconds = refreshSeconds
        self.deliveriesAPIURL = deliveriesAPIURL
        self.registrationAPIURL = registrationAPIURL
    }

    package init(environment: EnvironmentSettings) throws(ConfigurationError) {
        let secure = environment.string("CONSOLE_SECURE_COOKIE", default: "false")
        guard secure == "true" || secure == "false" else {
            throw ConfigurationError("CONSOLE_SECURE_COOKIE must be true or false, got \"\(secure)\"")
        }
        self.init(
            host: environment.string("CONSOLE_HOST", default: "0.0.0.0"),
            port: try environment.int("CONSOLE_PORT", default: 8083, in: 0...65535),
            sessionMinutes: try environment.int("CONSOLE_SESSION_MINUTES", default: 480, in: 1...10_080),
            secureCookie: secure == "true",
            refreshSeconds: try environment.int("CONSOLE_REFRESH_SECONDS", default: 5, in: 1...3600),
            deliveriesAPIURL: environment.string("CONSOLE_DELIVERIES_API_URL", default: "http://127.0.0.1:8082"),
            registrationAPIURL: environment.string("CONSOLE_REGISTRATION_API_URL", default: "http://127.0.0.1:8080")
        )
        signInMaxFailures = try environment.int("CONSOLE_SIGNIN_MAX_FAILURES", default: 5, in: 0...1_000)
        signInLockoutSeconds = try environment.int("CONSOLE_SIGNIN_LOCKOUT_SECONDS", default: 900, in: 1...86_400)
        trustedProxies = Set(
            environment.string("CONSOLE_TRUSTED_PROXIES", default: "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty })
        guard deliveriesAPIURL.hasPrefix("http://") || deliveriesAPIURL.hasPrefix("https://") else {
            throw ConfigurationError("CONSOLE_DELIVERIES_API_URL must be an http:// or https:// URL, got \"\(deliveriesAPIURL)\"")
        }
        guard registrationAPIURL.hasPrefix("http://") || registrationAPIURL.hasPrefix("https://") else {
            throw ConfigurationError("CONSOLE_REGISTRATION_API_URL must be an http:// or https:// URL, got \"\(registrationAPIURL)\"")
        }
    }
}
