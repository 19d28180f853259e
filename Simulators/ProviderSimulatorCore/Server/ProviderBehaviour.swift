/// What makes a simulator APNs or FCM: how it answers provider requests. The server around it
/// handles TLS, HTTP/2, the control API, latency, GOAWAY and the counters.
package protocol ProviderBehaviour: Sendable {
    /// "apns" or "fcm", used in logs and the control API.
    var providerName: String { get }
    /// When true, a new connection advertises MAX_CONCURRENT_STREAMS = 1 until one of its
    /// requests succeeds, then the configured limit in a new SETTINGS frame (APNs token auth).
    var limitsStreamsUntilFirstSuccess: Bool { get }
    /// Opaque data carried by the GOAWAY frames the simulator sends.
    var goAwayDebugData: String { get }
    /// Answers one provider request. Called on the connection's event loop; must not block.
    func respond(to request: SimulatorRequest, on connection: ConnectionState) -> SimulatorResponse
    /// Forgets provider state the control API's reset clears (token history, quotas).
    func reset()
    /// When set, TLS asks clients for a certificate (optional) and this checks it; the verdict is
    /// on `ConnectionState.clientCertificate`. Nil: no client certificates are requested.
    var clientCertificates: ClientCertificateVerifier? { get }
}

extension ProviderBehaviour {
    package var clientCertificates: ClientCertificateVerifier? { nil }
}
