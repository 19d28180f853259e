import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import Prometheus
import PushStore
import ServiceLifecycle

/// What every executable shares: configuration, logging and metrics bootstrap, the PostgreSQL
/// pool, the Kafka producer, readiness checks and the operations endpoints, all run in one
/// `ServiceGroup` that shuts down gracefully on SIGTERM or SIGINT.
///
/// A service's `@main` builds its own parts with `postgres`, `producer` and `configuration`
/// and hands them to `run(_:)`; they start after the shared parts and stop before them.
package struct ServiceRuntime: Sendable {
    package let name: String
    package let configuration: RuntimeConfiguration
    package let logger: Logger
    package let registry: PrometheusCollectorRegistry
    package let postgres: PostgresClient
    package let producer: KafkaProducer

    /// Reads the environment and bootstraps logging and metrics (once per process).
    package static func bootstrap(service: String, defaultOpsPort: Int, defaultLingerMilliseconds: Int = 5) throws -> ServiceRuntime {
        let configuration = try RuntimeConfiguration(
            service: service, defaultOpsPort: defaultOpsPort, defaultLingerMilliseconds: defaultLingerMilliseconds
        )
        let level = configuration.logLevel
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        return try ServiceRuntime(name: service, configuration: configuration, registry: registry)
    }

    package init(name: String, configuration: RuntimeConfiguration, registry: PrometheusCollectorRegistry) throws {
        self.name = name
        self.configuration = configuration
        self.registry = registry
        var logger = Logger(label: name)
        logger.logLevel = configuration.logLevel
        self.logger = logger
        postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
    }

    /// The checks behind `/health/ready`: PostgreSQL answers `SELECT 1` and a Kafka broker
    /// answers a metadata request.
    package var standardChecks: [ReadinessCheck] {
        let postgres = self.postgres
        let producer = self.producer
        return [
            ReadinessCheck(name: "postgres") { try await postgres.query("SELECT 1") },
            ReadinessCheck(name: "kafka") { try await producer.checkBroker() },
        ]
    }

    /// Runs the shared parts, then `services`, until SIGTERM/SIGINT; shuts down in reverse order
    /// (services first, then the producer flushes, then PostgreSQL closes).
    package func run(_ services: [any Service], extraChecks: [ReadinessCheck] = []) async throws {
        logger.info(
            "Starting",
            metadata: [
                "kafka.brokers": "\(configuration.kafka.bootstrapServers)", "postgres": "\(configuration.postgres)",
                "librdkafka": "\(KafkaRuntime.version)", "ops.port": "\(configuration.opsPort)",
            ])
        let ops = OperationsServer.build(
            host: configuration.opsHost, port: configuration.opsPort, registry: registry,
            checks: standardChecks + extraChecks, logger: logger
        )
        let grace = Duration.milliseconds(configuration.shutdownGraceMilliseconds)
        // The watchdog is last: services stop in reverse order, so it hears of the shutdown first.
        var groupConfiguration = ServiceGroupConfiguration(
            services: [
                .init(service: postgres), .init(service: SchemaCheck(postgres: postgres, logger: logger)), .init(service: producer), .init(service: ops),
            ]
                + services.map { .init(service: $0) } + [.init(service: ShutdownWatchdog(limit: grace + .seconds(5), logger: logger))],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // A shutdown that hangs (seen in the fault-injection suite: a registration service still
        // running minutes after SIGTERM) must not need an operator: after the grace period the
        // services still running are cancelled, and 5 s later the watchdog ends the process.
        // Either way no more is lost than by a SIGKILL, which every service is built to survive.
        groupConfiguration.maximumGracefulShutdownDuration = grace
        let group = ServiceGroup(configuration: groupConfiguration)
        try await group.run()
    }
}

/// Ends the process `limit` after a graceful shutdown began if it is still running then, with
/// one error line and exit status 70 (EX_SOFTWARE): a clean, quick exit instead of a crash
/// report, well inside the orchestrator's stop timeout.
struct ShutdownWatchdog: Service {
    let limit: Duration
    let logger: Logger

    func run() async throws {
        try? await gracefulShutdown()
        let (limit, logger) = (self.limit, self.logger)
        // Unstructured on purpose: it must outlive this service, which returns at once so the
        // others are told to stop.
        Task.detached {
            try? await Task.sleep(for: limit)
            logger.error("Graceful shutdown did not finish in time; exiting", metadata: ["limit": "\(limit)"])
            exit(70)
        }
    }
}

/// Refuses to start on a database whose schema is older than this build (run `pushctl migrate`).
struct SchemaCheck: Service {
    let postgres: PostgresClient
    let logger: Logger

    func run() async throws {
        try await Migrator(client: postgres, logger: logger).requireCurrentSchema()
        try? await gracefulShutdown()
    }
}

extension ServiceRuntime {
    /// The whole life of a service executable: bootstrap, build its parts, run until SIGTERM.
    /// A configuration error ends the process with status 78 (EX_CONFIG) and one line on
    /// stderr naming the setting, instead of a crash report.
    package static func main(
        service: String, defaultOpsPort: Int, defaultLingerMilliseconds: Int = 5,
        _ build: @Sendable (ServiceRuntime) throws -> [any Service] = { _ in [] }
    ) async {
        do {
            let runtime = try ServiceRuntime.bootstrap(
                service: service, defaultOpsPort: defaultOpsPort, defaultLingerMilliseconds: defaultLingerMilliseconds
            )
            try await runtime.run(try build(runtime))
        } catch let error as ConfigurationError {
            FileHandle.standardError.write(Data("\(service): configuration error: \(error)\n".utf8))
            exit(78)
        } catch let error as SchemaVersionError {
            FileHandle.standardError.write(Data("\(service): configuration error: \(error)\n".utf8))
            exit(78)
        } catch {
            FileHandle.standardError.write(Data("\(service): \(String(describing: error))\n".utf8))
            exit(1)
        }
    }
}
