import ArgumentParser
import NIOPosix
import ProviderSimulatorCore

/// `fcm-simulator`: Google's OAuth token endpoint and the FCM HTTP v1 send API over HTTP/2 + TLS.
@main
struct FCMSimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fcm-simulator",
        abstract: "Simulates FCM HTTP v1 and its OAuth token endpoint (HTTP/2 over TLS). See docs/simulators.md."
    )

    @OptionGroup var server: SimulatorServerOptions

    @Option(name: .customLong("service-account"), help: "Service-account JSON key file; repeatable.")
    var serviceAccounts: [String] = []

    @Option(help: "expires_in of issued access tokens, seconds.")
    var tokenLifetime = 3600

    @Option(help: "Accepted sends per project per minute before 429 QUOTA_EXCEEDED (default: unlimited).")
    var quotaPerMinute: Int?

    func run() async throws {
        let logger = self.server.makeLogger(label: "fcm-simulator")
        let fcm = FCMBehaviour.Configuration(
            serviceAccounts: try self.serviceAccounts.map(FCMServiceAccount.init(keyFile:)),
            accessTokenLifetime: self.tokenLifetime
        )
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, self.server.threads))
        let running = try await FCMSimulatorServer.start(
            server: try self.server.makeServerConfiguration(defaultPort: 8443),
            fcm: fcm,
            limits: self.server.limits,
            group: group,
            logger: logger
        )
        var faults = self.server.baselineFaults
        faults.quotaPerMinute = quotaPerMinute
        running.state.setBaselineFaults(faults)
        try await self.server.serve(running)
    }
}
