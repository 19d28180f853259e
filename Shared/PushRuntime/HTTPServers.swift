import Hummingbird
import HummingbirdCore
import NIOCore

extension RuntimeConfiguration {
    /// The HTTP/1.1 server every service's `Application` runs: connections without a complete
    /// request for `httpIdleTimeoutMilliseconds` are closed (`PUSH_HTTP_IDLE_TIMEOUT_MS`).
    package var httpServer: HTTPServerBuilder {
        .http1(configuration: HTTP1Channel.Configuration(idleTimeout: .milliseconds(Int64(httpIdleTimeoutMilliseconds))))
    }
}
