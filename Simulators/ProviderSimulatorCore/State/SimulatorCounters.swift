/// What a simulator has answered since start or the last reset.
package struct SimulatorCounters: Sendable, Codable, Equatable {
    /// Provider requests answered 2xx (control and health requests are not counted).
    package var accepted: Int = 0
    /// Provider requests answered with an error.
    package var rejected: Int = 0
    /// Answers by HTTP status ("200", "410", ...).
    package var byStatus: [String: Int] = [:]
    /// Error answers by provider reason or errorCode.
    package var byReason: [String: Int] = [:]
    /// TLS connections accepted.
    package var connections: Int = 0
    /// HTTP/2 streams opened by clients.
    package var streams: Int = 0
    /// GOAWAY frames sent.
    package var goAways: Int = 0
    /// SETTINGS frames sent after the initial one (APNs raising the stream limit).
    package var settingsUpdates: Int = 0
    /// The most streams one connection had open at once.
    package var peakConcurrentStreams: Int = 0
    /// Notifications dropped from the bounded log because it was full.
    package var logEvictions: Int = 0

    package init() {}
}
