import Logging
import NIOCore

/// Starts an FCM simulator: the shared HTTP/2 server with `FCMBehaviour` (token endpoint and
/// v1 send on the same port).
package enum FCMSimulatorServer {
    package static func start(
        server: SimulatorServer.Configuration,
        fcm: FCMBehaviour.Configuration,
        limits: SimulatorLimits = SimulatorLimits(),
        group: any EventLoopGroup,
        logger: Logger = Logger(label: "fcm-simulator")
    ) async throws -> SimulatorServer {
        let state = SimulatorState(maxConcurrentStreams: limits.maxConcurrentStreams, logCapacity: limits.logCapacity)
        let behaviour = FCMBehaviour(configuration: fcm, state: state)
        return try await SimulatorServer.start(
            configuration: server,
            behaviour: behaviour,
            state: state,
            group: group,
            logger: logger
        )
    }
}
