import ArgumentParser
import Foundation
import Logging
import NIOCore
import NIOPosix

/// Command-line options both simulator executables share (listening, TLS, limits, threads).
package struct SimulatorServerOptions: ParsableArguments {
    @Option(help: "Address to listen on.")
    package var host = "127.0.0.1"

    @Option(help: "Port to listen on; 0 picks a free one (see --port-file). Default: apns 2197, fcm 8443.")
    package var port: Int?

    @Option(help: "Write the bound port to this file once listening.")
    package var portFile: String?

    @Option(help: "PEM certificate chain for TLS. Without it a CA and a localhost certificate are generated.")
    package var cert: String?

    @Option(name: .customLong("cert-key"), help: "PEM private key of --cert.")
    package var certKey: String?

    @Option(help: "Write the generated CA certificate (PEM) here so clients can trust it.")
    package var caOut: String?

    @Option(
        name: .customLong("hostname"),
        help: "Another DNS name for the generated certificate, besides localhost (repeatable), e.g. the service name in docker compose.")
    package var hostnames: [String] = []

    @Option(help: "MAX_CONCURRENT_STREAMS advertised to connections that may use them all.")
    package var maxConcurrentStreams = 1000

    @Option(help: "Accepted notifications kept in the in-memory log.")
    package var logCapacity = 100_000

    @Option(help: "Event-loop threads (default: one per core).")
    package var threads = System.coreCount

    @Option(
        name: .customLong("latency-ms"),
        help: "Milliseconds added before every provider answer from the start (the fault plan's latencyMs; the control API can change it).")
    package var latencyMilliseconds = 0

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    package var logLevel = "info"

    package init() {}

    package func validate() throws {
        if self.latencyMilliseconds < 0 {
            throw ValidationError("--latency-ms must not be negative")
        }
        if (self.cert == nil) != (self.certKey == nil) {
            throw ValidationError("--cert and --cert-key go together")
        }
        if self.cert != nil, !self.hostnames.isEmpty {
            throw ValidationError("--hostname names the generated certificate; with --cert the certificate file names its hosts")
        }
    }

    /// The start-up fault plan these options ask for (what `POST /_control/reset` restores).
    package var baselineFaults: FaultPlan {
        var faults = FaultPlan()
        faults.latencyMs = self.latencyMilliseconds
        return faults
    }

    package var limits: SimulatorLimits {
        SimulatorLimits(maxConcurrentStreams: self.maxConcurrentStreams, logCapacity: self.logCapacity)
    }

    package func makeLogger(label: String) -> Logger {
        var logger = Logger(label: label)
        logger.logLevel = Logger.Level(rawValue: self.logLevel) ?? .info
        return logger
    }

    /// TLS material from the files, or generated (writing the CA to --ca-out).
    package func makeServerConfiguration(defaultPort: Int) throws -> SimulatorServer.Configuration {
        let tls: SimulatorTLS
        if let cert, let certKey {
            tls = try SimulatorTLS.files(certificate: cert, privateKey: certKey)
        } else {
            tls = try SimulatorTLS.generated(hostnames: self.hostnames)
            if let caOut, let pem = tls.caCertificatePEM {
                try pem.write(toFile: caOut, atomically: true, encoding: .utf8)
            }
        }
        var configuration = SimulatorServer.Configuration(tls: tls)
        configuration.host = self.host
        configuration.port = self.port ?? defaultPort
        return configuration
    }

    /// Writes --port-file, then serves until the process is stopped.
    package func serve(_ server: SimulatorServer) async throws {
        if let portFile {
            try "\(server.port)\n".write(toFile: portFile, atomically: true, encoding: .utf8)
        }
        print("listening on https://\(self.host):\(server.port) (h2)")
        try await server.waitUntilClosed()
    }
}
