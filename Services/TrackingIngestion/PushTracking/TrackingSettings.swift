import PushRuntime
import PushStore

/// Settings of the tracking-ingestion service (docs/configuration.md).
package struct TrackingSettings: Sendable {
    /// `TRACKING_HOST` / `TRACKING_PORT`: where `GET /r/` listens. Default `0.0.0.0:8081`.
    package var host: String
    package var port: Int
    /// `TRACKING_STORE_TIMEOUT_MS`: how long a hit may wait for the broker to store its event
    /// before the answer is 503 (the SDKs do not retry, so the hit is lost to the device; the
    /// answer says so honestly instead of a 200 for an event that may never exist). Default 5000.
    package var storeTimeoutMilliseconds: Int
    /// `TRACKING_LINGER_MS`: how long the producer waits to batch hits into one broker request.
    /// Default 5: many concurrent hits share a request and each answer waits a few ms more.
    package var lingerMilliseconds: Int
    /// `TRACKING_LOG_GROUP`: consumer group and `consumer_offsets` key of the `tracking_log`
    /// projection; a new name rebuilds the table's rows from the beginning of `push.tracking`.
    package var projectionName: String

    package init(
        host: String = "0.0.0.0", port: Int = 8081, storeTimeoutMilliseconds: Int = 5_000, lingerMilliseconds: Int = 5,
        projectionName: String = "push-tracking-log-projection"
    ) {
        self.host = host
        self.port = port
        self.storeTimeoutMilliseconds = storeTimeoutMilliseconds
        self.lingerMilliseconds = lingerMilliseconds
        self.projectionName = projectionName
    }

    package init(environment: EnvironmentSettings) throws(ConfigurationError) {
        self.init(
            host: environment.string("TRACKING_HOST", default: "0.0.0.0"),
            port: try environment.int("TRACKING_PORT", default: 8081),
            storeTimeoutMilliseconds: try environment.int("TRACKING_STORE_TIMEOUT_MS", default: 5_000),
            lingerMilliseconds: try environment.int("TRACKING_LINGER_MS", default: 5),
            projectionName: environment.string("TRACKING_LOG_GROUP", default: "push-tracking-log-projection")
        )
        guard storeTimeoutMilliseconds > 0 else { throw ConfigurationError("TRACKING_STORE_TIMEOUT_MS must be positive; got \(storeTimeoutMilliseconds)") }
        guard lingerMilliseconds >= 0 else { throw ConfigurationError("TRACKING_LINGER_MS must not be negative; got \(lingerMilliseconds)") }
    }
}
