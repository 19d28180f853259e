import Foundation
import PushRuntime
import PushStore

/// Settings of the registration service (docs/configuration.md).
package struct RegistrationSettings: Sendable {
    /// `REGISTRATION_HOST` / `REGISTRATION_PORT`: the SDK endpoints. Default `0.0.0.0:8080`.
    package var host: String
    package var port: Int
    /// `REGISTRATION_ADMIN_PORT` / `REGISTRATION_ADMIN_HOST`: where the admin API (`/admin/v1`)
    /// listens when it must not share the SDKs' public port; the SDK port then answers 404 for
    /// it. Default unset: the admin API is served on `REGISTRATION_PORT` too. The host defaults
    /// to `REGISTRATION_HOST`.
    package var adminPort: Int?
    package var adminHost: String?
    /// `REGISTRATION_BODY_LIMIT`: largest accepted body in bytes; larger is 413. Default 16384.
    package var bodyLimit: Int
    /// `REGISTRATION_STORE_TIMEOUT_MS`: how long a registration may wait for the broker to store
    /// its event before the answer is 503. Default 5000.
    package var storeTimeoutMilliseconds: Int
    /// `REGISTRATION_RATE_PER_KEY` / `REGISTRATION_BURST_PER_KEY`: registrations per second per
    /// integration key (0 disables). Default 2000/s, bursts of 4000.
    package var ratePerKey: Double
    package var burstPerKey: Double
    /// `REGISTRATION_RATE_PER_ADDRESS` / `REGISTRATION_BURST_PER_ADDRESS`: requests per second
    /// per client address (0 disables). Default 50/s, bursts of 100 (carrier NATs share addresses).
    package var ratePerAddress: Double
    package var burstPerAddress: Double
    /// `REGISTRATION_TRUSTED_PROXIES`: addresses of the reverse proxies in front of the service
    /// (comma-separated IPs). A request from one of them is counted against the client address
    /// its `X-Forwarded-For` names (the last address not itself a trusted proxy); from any other
    /// peer the header is ignored. Default none: the socket's peer is the client.
    package var trustedProxies: Set<String> = []
    /// `REGISTRATION_PURGE_AFTER_DAYS`: quarantined subscriptions are purged (by event) this long
    /// after they were disabled. Default 30 days.
    package var purgeAfter: Duration = .seconds(30 * 86_400)
    /// `REGISTRATION_PURGE_INTERVAL_SECONDS`: how often the purge runs. Default 3600.
    package var purgeInterval: Duration = .seconds(3_600)
    /// `REGISTRATION_SIGNIN_MAX_FAILURES` / `REGISTRATION_SIGNIN_LOCKOUT_SECONDS`: wrong console
    /// passwords per operator (`POST /admin/v1/sessions`) before the operator is locked out, and
    /// for how long from the first. Default 5 in 900 s; 0 failures disables the lockout.
    package var signInMaxFailures = 5
    package var signInLockoutSeconds = 900
    /// `REGISTRATION_BCRYPT_COST`: bcrypt's cost for new console passwords (each step doubles
    /// the work of a hash and of every guess). Default 12, 10 to 16.
    package var bcryptCost = 12

    package init(
        host: String = "0.0.0.0", port: Int = 8080, bodyLimit: Int = 16_384, storeTimeoutMilliseconds: Int = 5_000,
        ratePerKey: Double = 2_000, burstPerKey: Double = 4_000, ratePerAddress: Double = 50, burstPerAddress: Double = 100
    ) {
        self.host = host
        self.port = port
        self.bodyLimit = bodyLimit
        self.storeTimeoutMilliseconds = storeTimeoutMilliseconds
        self.ratePerKey = ratePerKey
        self.burstPerKey = burstPerKey
        self.ratePerAddress = ratePerAddress
        self.burstPerAddress = burstPerAddress
    }

    package init(environment: EnvironmentSettings) throws(ConfigurationError) {
        self.init(
            host: environment.string("REGISTRATION_HOST", default: "0.0.0.0"),
            port: try environment.int("REGISTRATION_PORT", default: 8080),
            bodyLimit: try environment.int("REGISTRATION_BODY_LIMIT", default: 16_384),
            storeTimeoutMilliseconds: try environment.int("REGISTRATION_STORE_TIMEOUT_MS", default: 5_000),
            ratePerKey: Double(try environment.int("REGISTRATION_RATE_PER_KEY", default: 2_000)),
            burstPerKey: Double(try environment.int("REGISTRATION_BURST_PER_KEY", default: 4_000)),
            ratePerAddress: Double(try environment.int("REGISTRATION_RATE_PER_ADDRESS", default: 50)),
            burstPerAddress: Double(try environment.int("REGISTRATION_BURST_PER_ADDRESS", default: 100))
        )
        let adminPort = try environment.int("REGISTRATION_ADMIN_PORT", default: 0)
        guard (0...65_535).contains(adminPort) else {
            throw ConfigurationError("REGISTRATION_ADMIN_PORT must be a TCP port (1 to 65535, or 0 for the SDK port); got \(adminPort)")
        }
        if adminPort != 0 {
            guard adminPort != port else {
                throw ConfigurationError("REGISTRATION_ADMIN_PORT must differ from REGISTRATION_PORT (\(port)); leave it unset to share the port")
            }
            self.adminPort = adminPort
            self.adminHost = environment.string("REGISTRATION_ADMIN_HOST", default: host)
        }
        signInMaxFailures = max(0, try environment.int("REGISTRATION_SIGNIN_MAX_FAILURES", default: 5))
        signInLockoutSeconds = max(1, try environment.int("REGISTRATION_SIGNIN_LOCKOUT_SECONDS", default: 900))
        bcryptCost = try environment.int("REGISTRATION_BCRYPT_COST", default: 12)
        guard (10...16).contains(bcryptCost) else {
            throw ConfigurationError("REGISTRATION_BCRYPT_COST must be between 10 and 16; got \(bcryptCost)")
        }
        purgeAfter = .seconds(try environment.int("REGISTRATION_PURGE_AFTER_DAYS", default: 30) * 86_400)
        purgeInterval = .seconds(max(1, try environment.int("REGISTRATION_PURGE_INTERVAL_SECONDS", default: 3_600)))
        trustedProxies = Set(
            environment.string("REGISTRATION_TRUSTED_PROXIES", default: "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty })
    }
}
