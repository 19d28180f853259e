/// Faults the control API injects into a running simulator. Every field has a harmless default.
package struct FaultPlan: Sendable, Codable, Equatable {
    /// Added to every provider answer (not to control or health answers).
    package var latencyMs: Int = 0
    /// Share of otherwise valid requests, 0...100, answered with `failStatus`/`failReason`.
    package var failPercent: Double = 0
    package var failStatus: Int = 500
    /// The APNs reason or FCM errorCode of injected failures; the provider's usual one for
    /// `failStatus` when nil.
    package var failReason: String?
    /// The next N valid requests are answered 429 (APNs TooManyRequests, FCM QUOTA_EXCEEDED for
    /// the project).
    package var burst429: Int = 0
    /// Each connection gets a GOAWAY after it has carried this many streams.
    package var goAwayAfterStreams: Int?
    /// FCM: accepted sends per project per minute before 429 QUOTA_EXCEEDED (nil: unlimited).
    package var quotaPerMinute: Int?
    /// FCM: registration token → how many of its next sends are answered 429 QUOTA_EXCEEDED for
    /// the device's message rate (then accepted again).
    package var deviceQuota: [String: Int] = [:]

    package init() {}
}
