import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import Prometheus
import PushStore
import ServiceLifecycle
import Synchronization

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
        var factory = PrometheusMetricsFactory(registry: registry)
        // A delivery's phases last seconds to an hour; the default buckets stop at 10 s.
        for label in ServiceRuntime.deliveryPhaseHistograms {
            factory.durationHistogramBuckets[label] = ServiceRuntime.deliveryPhaseBuckets
        }
        MetricsSystem.bootstrap(factory)
        return try ServiceRuntime(name: service, configuration: configuration, registry: registry)
    }

    /// The histograms of a delivery's phases (docs/operations.md): request to planned, planned
    /// to a message's final status.
    package static let deliveryPhaseHistograms = ["push_delivery_request_to_planned_seconds", "push_sender_planned_to_final_seconds"]

    /// Their buckets, 50 ms to an hour.
    package static let deliveryPhaseBuckets: [Duration] = [
        .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2_500), .seconds(5), .seconds(10),
        .seconds(30), .seconds(60), .seconds(120), .seconds(300), .seconds(600), .seconds(1_800), .seconds(3_600),
    ]

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
            checks: standardChecks + extraChecks, server: configuration.httpServer, logger: logger
        )
        let grace = Duration.milliseconds(configuration.shutdownGraceMilliseconds)
        let watchdog = Duration.milliseconds(RuntimeConfiguration.shutdownWatchdogMilliseconds)
        let shutdown = ShutdownSignal()
        // The signal is last: services stop in reverse order, so it hears of the shutdown first.
        var groupConfiguration = ServiceGroupConfiguration(
            services: [
                .init(service: postgres), .init(service: SchemaCheck(postgres: postgres, logger: logger)), .init(service: producer), .init(service: ops),
            ]
                + services.map { .init(service: $0) } + [.init(service: shutdown)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger
        )
        // A shutdown that hangs (seen in the fault-injection suite: a registration service still
        // running minutes after SIGTERM) must not need an operator: after the grace period the
        // services still running are cancelled, and `watchdog` later the process ends. Either
        // way no more is lost than by a SIGKILL, which every service is built to survive.
        groupConfiguration.maximumGracefulShutdownDuration = grace
        let group = ServiceGroup(configuration: groupConfiguration)
        let clock = ContinuousClock()
        // Once the grace period ran out, what was still running was cancelled: a forced
        // shutdown (it may have cut work short, as a SIGKILL would), whether the cancelled parts
        // then returned or failed. The caller exits with status 70, as the watchdog would.
        func ranOutOfTime() -> Bool { shutdown.beganAt.map { clock.now - $0 >= grace } ?? false }
        do {
            try await runGroup(group, until: shutdown, grace: grace, watchdog: watchdog, clock: clock)
        } catch  where ranOutOfTime() {
            logger.error(
                "Graceful shutdown did not finish in time; what was still running was cancelled", metadata: ["grace": "\(grace)", "error": "\(error)"])
            throw ShutdownTimedOut()
        }
        if ranOutOfTime() {
            logger.error("Graceful shutdown did not finish in time; what was still running was cancelled", metadata: ["grace": "\(grace)"])
            throw ShutdownTimedOut()
        }
        logger.info("Stopped", metadata: ["after": "\(shutdown.beganAt.map { clock.now - $0 } ?? .zero)"])
    }

    /// Runs the group and, as its sibling, the deadline that ends the process `grace + watchdog`
    /// after the shutdown began if the group has not returned by then.
    private func runGroup(_ group: ServiceGroup, until shutdown: ShutdownSignal, grace: Duration, watchdog: Duration, clock: ContinuousClock) async throws {
        let logger = self.logger
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await group.run() }
            tasks.addTask {
                // Cancelled when the group returns first; otherwise ends the process.
                guard await shutdown.began() else { return }
                let began = shutdown.beganAt ?? clock.now
                logger.info("Shutting down", metadata: ["grace": "\(grace)"])
                try await Task.sleep(for: grace + watchdog)
                logger.error(
                    "Graceful shutdown did not finish in time; exiting", metadata: ["limit": "\(grace + watchdog)", "elapsed": "\(clock.now - began)"])
                exit(70)
            }
            defer { tasks.cancelAll() }
            try await tasks.next()
        }
    }
}

/// The graceful shutdown outlasted `PUSH_SHUTDOWN_GRACE_MS` and a part failed when cancelled:
/// the process exits with status 70, like the watchdog.
package struct ShutdownTimedOut: Error, CustomStringConvertible {
    package var description: String { "graceful shutdown did not finish in time" }
}

/// Tells the runtime when a graceful shutdown begins: the last service of the group, so the
/// first to hear of it. The runtime then starts its deadline (`ServiceRuntime.run`).
final class ShutdownSignal: Service, Sendable {
    private let state = Mutex<(began: Bool?, waiter: CheckedContinuation<Bool, Never>?)>((nil, nil))
    private let beganInstant = Mutex<ContinuousClock.Instant?>(nil)

    /// When the group began to stop, if it did.
    var beganAt: ContinuousClock.Instant? { beganInstant.withLock { $0 } }

    /// Returns when the group shuts down gracefully, or is cancelled (a service failed): either
    /// way the group is stopping, and the deadline starts.
    func run() async throws {
        try? await gracefulShutdown()
        beganInstant.withLock { $0 = $0 ?? .now }
        finish(began: true)
    }

    private func finish(began: Bool) {
        let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard state.began == nil else { return nil }
            state.began = began
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: began)
    }

    /// True once the group began to stop; false if the waiting task is cancelled first.
    func began() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool? in
                    if let began = state.began { return began }
                    if Task.isCancelled { return false }
                    state.waiter = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Bool, Never>? in
                defer { state.waiter = nil }
                return state.waiter
            }
            waiter?.resume(returning: false)
        }
    }
}

/// Refuses to start on a database whose schema is older than this build (run `pushctl migrate`).
struct SchemaCheck: Service {
    let postgres: PostgresClient
    let logger: Logger

    func run() async throws {
        do {
            // With PostgreSQL unreachable the check would wait for a connection until the
            // grace period ran out; a stop needs no answer from it.
            try await cancelWhenGracefulShutdown {
                try await Migrator(client: postgres, logger: logger).requireCurrentSchema()
            }
        } catch  where Task.isShuttingDownGracefully {
            logger.notice("Schema check abandoned: shutting down before PostgreSQL answered")
            return
        }
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
        } catch is ShutdownTimedOut {
            exit(70)
        } catch let error as SchemaVersionError {
            FileHandle.standardError.write(Data("\(service): configuration error: \(error)\n".utf8))
            exit(78)
        } catch {
            FileHandle.standardError.write(Data("\(service): \(String(describing: error))\n".utf8))
            exit(1)
        }
    }
}
