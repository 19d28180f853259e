import ArgumentParser
import Foundation
import NIOPosix
import ProviderSimulatorCore

/// `apns-simulator`: an APNs provider API over HTTP/2 + TLS for tests, the demo and benchmarks.
@main
struct APNsSimulatorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "apns-simulator",
        abstract: "Simulates Apple's APNs provider API (HTTP/2 over TLS). See docs/simulators.md."
    )

    @OptionGroup var server: SimulatorServerOptions

    @Option(
        name: .customLong("key"),
        help: "Provider-token key TEAM:KEYID:PATH (PEM public key or .p8 private key); repeatable. None: no token auth."
    )
    var keys: [String] = []

    @Option(name: .customLong("topic"), help: "Allowed apns-topic (bundle id); repeatable. None: any topic.")
    var topics: [String] = []

    @Option(
        name: .customLong("client-ca"),
        help: "PEM CA certificate(s) that client certificates must chain to; repeatable. Turns on certificate auth (optional client certificates)."
    )
    var clientCAs: [String] = []

    func run() async throws {
        let logger = self.server.makeLogger(label: "apns-simulator")
        let apns = APNsBehaviour.Configuration(
            allowedTopics: Set(self.topics),
            signingKeys: try self.keys.map(APNsProviderTokenVerifier.SigningKey.init(argument:)),
            clientCertificateCAs: try self.clientCAs.map { try String(contentsOfFile: $0, encoding: .utf8) }
        )
        let group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, self.server.threads))
        let running = try await APNsSimulatorServer.start(
            server: try self.server.makeServerConfiguration(defaultPort: 2197),
            apns: apns,
            limits: self.server.limits,
            group: group,
            logger: logger
        )
        running.state.setBaselineFaults(self.server.baselineFaults)
        try await self.server.serve(running)
    }
}
