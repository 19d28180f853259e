import ArgumentParser
import Foundation
import Kafka
import Logging

/// `kafka-bench`: measures the project's Kafka client (`Shared/Kafka`) against a real broker.
///
/// Each subcommand prints one machine-readable line on stdout (see `BenchmarkResult`);
/// `bench/kafka.sh` runs them next to `kcat` doing the same work and compares the rates.
@main
struct KafkaBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "kafka-bench",
        abstract: "Throughput of the project's Kafka producer and consumer.",
        discussion: "Run bench/kafka.sh for the comparison with kcat; docs/benchmarks.md explains the figures.",
        subcommands: [ProduceBenchmark.self, ConsumeBenchmark.self]
    )
}

/// Options shared by both subcommands.
struct BenchmarkOptions: ParsableArguments {
    @Option(help: "Bootstrap servers (host:port,...). Defaults to $KAFKA_BROKERS.")
    var brokers: String?

    @Option(help: "Topic to write to or read from. It must exist (the client never auto-creates topics).")
    var topic: String

    @Option(help: "Number of records.")
    var records: Int = 200_000

    @Option(help: "Value size in bytes.")
    var size: Int = 100

    @Option(
        name: .customLong("property"),
        help: "Extra librdkafka property name=value, repeatable, applied over the client's own settings (KafkaClientConfiguration.properties).")
    var properties: [String] = []

    @Option(help: "Log level of the client and of librdkafka's log lines.")
    var logLevel: Logger.Level = .warning

    func validate() throws {
        guard records > 0 else { throw ValidationError("--records must be positive") }
        guard size >= 0 else { throw ValidationError("--size must not be negative") }
        for entry in properties where !entry.contains("=") {
            throw ValidationError("--property takes name=value, not \(entry)")
        }
    }

    func clientConfiguration() throws -> KafkaClientConfiguration {
        guard let brokers = brokers ?? ProcessInfo.processInfo.environment["KAFKA_BROKERS"] else {
            throw ValidationError("pass --brokers or set KAFKA_BROKERS (eval \"$(scripts/stack env)\")")
        }
        let extra = properties.map { entry in
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            return (String(parts[0]), String(parts[1]))
        }
        return KafkaClientConfiguration(
            bootstrapServers: brokers,
            clientID: "kafka-bench",
            properties: Dictionary(extra, uniquingKeysWith: { $1 })
        )
    }

    func logger(label: String) -> Logger {
        var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
        logger.logLevel = logLevel
        return logger
    }
}

extension Logger.Level: @retroactive ExpressibleByArgument {}
