/// How an `FCMClient` reaches FCM and its OAuth token endpoint. Every field has a default that
/// fits Google's production endpoints; tests and proxies override `baseURL`, `tokenURLOverride`
/// and `trustedCAPEM`.
package struct FCMClientConfiguration: Sendable {
    /// Scheme, host and port of the FCM HTTP v1 API (no path). Default `https://fcm.googleapis.com`.
    package var baseURL: String
    /// When set, access tokens are requested here instead of the service account's `token_uri`
    /// (simulator or egress proxy). The assertion's `aud` stays the account's `token_uri`.
    package var tokenURLOverride: String?
    /// A PEM CA certificate (or several) to trust instead of the system roots (the simulator's CA).
    package var trustedCAPEM: String?
    /// Long-lived HTTP/2 connections to the send endpoint; requests go to the one with the fewest
    /// outstanding requests. Default 2.
    package var connections: Int
    /// Requests in flight per connection; more wait in the client, in order. Keep it at or below
    /// the server's SETTINGS_MAX_CONCURRENT_STREAMS (Google's front ends advertise 100): requests
    /// AsyncHTTPClient itself has to queue fail after `connectTimeout`. Default 100.
    package var maxConcurrentStreamsPerConnection: Int
    /// TCP + TLS establishment limit per connection. Default 10 s.
    package var connectTimeout: Duration
    /// Limit for one HTTP exchange (send or token request), head and body. Default 30 s.
    package var requestTimeout: Duration
    /// An access token is refreshed this long before its `expires_in` runs out. Default 5 minutes.
    /// When a token lives shorter than twice the margin it is refreshed at half its lifetime.
    package var tokenRefreshMargin: Duration
    /// The per-project pause and recovery after QUOTA_EXCEEDED.
    package var throttle: FCMProjectThrottle.Configuration

    package init(
        baseURL: String = "https://fcm.googleapis.com",
        tokenURLOverride: String? = nil,
        trustedCAPEM: String? = nil,
        connections: Int = 2,
        maxConcurrentStreamsPerConnection: Int = 100,
        connectTimeout: Duration = .seconds(10),
        requestTimeout: Duration = .seconds(30),
        tokenRefreshMargin: Duration = .seconds(300),
        throttle: FCMProjectThrottle.Configuration = FCMProjectThrottle.Configuration()
    ) {
        self.baseURL = baseURL
        self.tokenURLOverride = tokenURLOverride
        self.trustedCAPEM = trustedCAPEM
        self.connections = connections
        self.maxConcurrentStreamsPerConnection = maxConcurrentStreamsPerConnection
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.tokenRefreshMargin = tokenRefreshMargin
        self.throttle = throttle
    }
}
