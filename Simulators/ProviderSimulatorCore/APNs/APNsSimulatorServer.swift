import Logging
import NIOCore

/// Starts an APNs simulator: the shared HTTP/2 server with `APNsBehaviour`.
package enum APNsSimulatorServer {
    package static func start(
        server: SimulatorServer.Configuration,
        apns: APNsBehaviour.Configuration,
        limits: SimulatorLimits = SimulatorLimits(),
        group: any EventLoopGroup,
        logger: Logger = Logger(label: "apns-simulator")
    ) async throws -> SimulatorServer {
        let state = SimulatorState(maxConcurrentStreams: limits.maxConcurrentStreams, logCapacity: limits.logCapacity)
        let behaviour = try APNsBehaviour(configuration: apns, state: state)
        return try await SimulatorServer.start(
            configuration: server,
            behaviour: behaviour,
            state: state,
            group: group,
            logger: logger
        )
    }
}

/// Limits both simulators share.
package struct SimulatorLimits: Sendable {
    /// MAX_CONCURRENT_STREAMS once a connection may use them all (APNs has shown 500 and 1,500).
    package var maxConcurrentStreams: Int = 1000
    /// Accepted notifications the log keeps before dropping the oldest.
    package var logCapacity: Int = 100_000

    package init(maxConcurrentStreams: Int = 1000, logCapacity: Int = 100_000) {
        self.maxConcurrentStreams = maxConcurrentStreams
        self.logCapacity = logCapacity
    }
}
