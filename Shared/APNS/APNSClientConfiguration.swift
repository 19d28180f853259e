/// How an `APNSClient` reaches APNs. Every field has the default a production sender wants;
/// tests point the base URLs at the simulator and set `trustedCAPEM` to its CA.
package struct APNSClientConfiguration: Sendable {
    /// Base URL of the production service (scheme, host, optional port; no path).
    package var productionBaseURL: String
    /// Base URL of the development (sandbox) service.
    package var sandboxBaseURL: String
    /// When set, only these PEM roots are trusted (the simulator's CA, a TLS-inspecting proxy);
    /// otherwise the system roots.
    package var trustedCAPEM: String?
    /// Long-lived HTTP/2 connections per (environment, credentials) pool.
    package var connectionsPerPool: Int
    /// Time to establish TCP + TLS + HTTP/2 before a send fails with `connectFailed`/`timeout`.
    package var connectTimeout: Duration
    /// Deadline of one HTTP exchange (queueing for a stream included).
    package var requestTimeout: Duration
    /// Age at which a provider token is replaced. Clamped to 20...59 minutes: APNs refuses a new
    /// token within 20 minutes of the previous one and an older one after 60.
    package var tokenRefreshInterval: Duration
    /// A connection without any request for this long is closed (APNs closes idle ones too, with
    /// `IdleTimeout`). Long by default: connections are meant to live.
    package var connectionIdleTimeout: Duration

    package init(
        productionBaseURL: String = "https://api.push.apple.com",
        sandboxBaseURL: String = "https://api.sandbox.push.apple.com",
        trustedCAPEM: String? = nil,
        connectionsPerPool: Int = 2,
        connectTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(30),
        tokenRefreshInterval: Duration = .seconds(50 * 60),
        connectionIdleTimeout: Duration = .seconds(60 * 60)
    ) {
        self.productionBaseURL = productionBaseURL
        self.sandboxBaseURL = sandboxBaseURL
        self.trustedCAPEM = trustedCAPEM
        self.connectionsPerPool = connectionsPerPool
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.tokenRefreshInterval = tokenRefreshInterval
        self.connectionIdleTimeout = connectionIdleTimeout
    }

    /// APNs refuses a new token less than 20 minutes after the previous one.
    package static let minimumTokenRefreshInterval: Duration = .seconds(20 * 60)
    /// APNs refuses tokens older than 60 minutes; one minute of margin for clock skew.
    package static let maximumTokenRefreshInterval: Duration = .seconds(59 * 60)

    /// `tokenRefreshInterval` within the bounds APNs enforces.
    var effectiveTokenRefreshInterval: Duration {
        min(max(self.tokenRefreshInterval, Self.minimumTokenRefreshInterval), Self.maximumTokenRefreshInterval)
    }

    func baseURL(for environment: APNSEnvironment) -> String {
        var url = environment == .production ? self.productionBaseURL : self.sandboxBaseURL
        while url.hasSuffix("/") { url.removeLast() }
        return url
    }
}
