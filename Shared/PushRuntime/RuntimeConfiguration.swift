import Kafka
import Logging
import PushEvents
import PushStore

/// The settings every service reads (docs/configuration.md lists them with their defaults).
package struct RuntimeConfiguration: Sendable {
    /// `KAFKA_BROKERS`: bootstrap servers. Default `localhost:9092`. `KAFKA_PROPERTY_<NAME>`
    /// passes any librdkafka property to every client (`properties`).
    package var kafka: KafkaClientConfiguration
    /// `KAFKA_PRODUCER_PROPERTY_<NAME>`: librdkafka properties for producers only.
    package var producerProperties: [String: String]
    /// `KAFKA_CONSUMER_PROPERTY_<NAME>`: librdkafka properties for consumer-group members only.
    package var consumerProperties: [String: String]
    /// `POSTGRES_URL`. Default `postgres://push:push@localhost:5432/push`.
    package var postgres: PostgresSettings
    /// `PUSH_TOPIC_*`: topic names and partition counts.
    package var topics: TopicCatalog
    /// `PUSH_LOG_RETENTION_DAYS`: days of `broad_log`, `exclusion_log` and `tracking_log` kept;
    /// older month partitions are dropped whole (`LogPartitions`). 0 (default) keeps every row.
    package var logRetentionDays: Int
    /// `LOG_LEVEL`: trace, debug, info (default), notice, warning, error, critical.
    package var logLevel: Logger.Level
    /// `PUSH_OPS_HOST` / `PUSH_OPS_PORT`: where `/metrics` and `/health/*` listen.
    package var opsHost: String
    package var opsPort: Int
    /// `KAFKA_SESSION_TIMEOUT_MS`: consumer-group session timeout. Default 10000.
    package var kafkaSessionTimeoutMilliseconds: Int
    /// `KAFKA_DELIVERY_TIMEOUT_MS`: how long a produced event may wait for the broker. Default 10000.
    package var kafkaDeliveryTimeoutMilliseconds: Int
    /// `KAFKA_LINGER_MS`: how long the producer waits to fill a batch. Default 5, the senders 50
    /// (their result events wait for no user, and fuller batches cost the broker less per record).
    package var kafkaLingerMilliseconds: Int
    /// `PUSH_SHUTDOWN_GRACE_MS`: how long a graceful shutdown (SIGTERM) may take before the
    /// services still running are cancelled; `shutdownWatchdogMilliseconds` after that the
    /// process exits (status 70). Default 7000: with the watchdog's 2 s, 9 s, inside docker's
    /// default 10 s stop timeout.
    package var shutdownGraceMilliseconds: Int
    /// `PUSH_HTTP_IDLE_TIMEOUT_MS`: how long an HTTP connection of any of the service's servers
    /// (public endpoints, admin API, console, operations) may stay without a complete request
    /// before it is closed. Default 30 s. It covers a connection that sends nothing, one that
    /// sends a request's head slower than that (a slowloris: until its head is complete no
    /// request is under way) and a body that stops arriving; not an answer being prepared.
    package var httpIdleTimeoutMilliseconds: Int

    /// How long after the grace period cancelled what was still running the process is ended
    /// (status 70) if it has not exited yet.
    package static let shutdownWatchdogMilliseconds = 2_000

    package init(
        service: String, defaultOpsPort: Int, defaultLingerMilliseconds: Int = 5, environment: EnvironmentSettings = EnvironmentSettings()
    ) throws(ConfigurationError) {
        kafka = KafkaClientConfiguration(
            bootstrapServers: environment.string("KAFKA_BROKERS", default: "localhost:9092"),
            clientID: environment.string("KAFKA_CLIENT_ID", default: service),
            properties: try environment.kafkaProperties(prefix: "KAFKA_PROPERTY_")
        )
        producerProperties = try environment.kafkaProperties(prefix: "KAFKA_PRODUCER_PROPERTY_")
        consumerProperties = try environment.kafkaProperties(prefix: "KAFKA_CONSUMER_PROPERTY_")
        postgres = try PostgresSettings(
            url: environment.string("POSTGRES_URL", default: "postgres://push:push@localhost:5432/push"),
            maximumConnections: try environment.int("POSTGRES_MAX_CONNECTIONS", default: 10)
        )
        topics = TopicCatalog(
            environment: environment.values,
            resultsRetentionDays: try environment.int("PUSH_RESULTS_RETENTION_DAYS", default: 0, in: 0...36_500),
            trackingRetentionDays: try environment.int("PUSH_TRACKING_RETENTION_DAYS", default: 0, in: 0...36_500)
        )
        logRetentionDays = try environment.int("PUSH_LOG_RETENTION_DAYS", default: 0, in: 0...36_500)
        guard logRetentionDays == 0 || logRetentionDays >= LogPartitions.minimumRetentionDays else {
            throw ConfigurationError(
                "PUSH_LOG_RETENTION_DAYS must be 0 (keep every row) or at least \(LogPartitions.minimumRetentionDays) (a result can come that long after its message was planned); got \(logRetentionDays)"
            )
        }
        let level = environment.string("LOG_LEVEL", default: "info")
        guard let logLevel = Logger.Level(rawValue: level) else {
            throw ConfigurationError("LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical; got \"\(level)\"")
        }
        self.logLevel = logLevel
        opsHost = environment.string("PUSH_OPS_HOST", default: "0.0.0.0")
        opsPort = try environment.int("PUSH_OPS_PORT", default: defaultOpsPort)
        kafkaSessionTimeoutMilliseconds = try environment.int("KAFKA_SESSION_TIMEOUT_MS", default: 10_000)
        kafkaDeliveryTimeoutMilliseconds = try environment.int("KAFKA_DELIVERY_TIMEOUT_MS", default: 10_000)
        kafkaLingerMilliseconds = try environment.int("KAFKA_LINGER_MS", default: defaultLingerMilliseconds, in: 0...900_000)
        shutdownGraceMilliseconds = try environment.int("PUSH_SHUTDOWN_GRACE_MS", default: 7_000)
        httpIdleTimeoutMilliseconds = try environment.int("PUSH_HTTP_IDLE_TIMEOUT_MS", default: 30_000, in: 100...3_600_000)
        guard shutdownGraceMilliseconds >= 1_000 else {
            throw ConfigurationError("PUSH_SHUTDOWN_GRACE_MS must be at least 1000; got \(shutdownGraceMilliseconds)")
        }
    }

    package var producer: KafkaProducerConfiguration {
        var client = kafka
        client.properties.merge(producerProperties) { _, producerOnly in producerOnly }
        var producer = KafkaProducerConfiguration(
            client: client, lingerMilliseconds: kafkaLingerMilliseconds, deliveryTimeoutMilliseconds: kafkaDeliveryTimeoutMilliseconds
        )
        // Records still waiting for the broker at shutdown get a third of the grace (2.3 s by
        // default), so that the service's own parts, before, and PostgreSQL, after, have the rest.
        producer.closeFlushTimeoutMilliseconds = shutdownGraceMilliseconds / 3
        return producer
    }

    /// Consumer settings for `group` and `topics` (a projection runner replaces both with its own).
    package func consumer(group: String, topics: [String] = []) -> KafkaConsumerConfiguration {
        var client = kafka
        client.properties.merge(consumerProperties) { _, consumerOnly in consumerOnly }
        var consumer = KafkaConsumerConfiguration(
            client: client, groupID: group, topics: topics,
            sessionTimeoutMilliseconds: kafkaSessionTimeoutMilliseconds,
            heartbeatIntervalMilliseconds: max(1_000, kafkaSessionTimeoutMilliseconds / 5)
        )
        // A first join still in progress at shutdown may finish for a quarter of the grace
        // (1.75 s by default): a service with two projections closes them one after the other.
        consumer.joinGraceOnCloseMilliseconds = min(consumer.joinGraceOnCloseMilliseconds, shutdownGraceMilliseconds / 4)
        // Leaving the group gets an eighth (875 ms): a group rebalancing because other instances
        // stop too can hold a leave for as long as its rebalance lasts, and a sender closes the
        // consumers of its three lanes one after the other.
        consumer.leaveTimeoutMilliseconds = min(consumer.leaveTimeoutMilliseconds, shutdownGraceMilliseconds / 8)
        return consumer
    }
}
