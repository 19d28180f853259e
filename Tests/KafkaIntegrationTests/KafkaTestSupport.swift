import Foundation
import Kafka
import Logging
import PushTestSupport
import Testing

/// Where the broker started by `scripts/test` listens. Integration tests fail, never skip, when
/// it is missing: a green run must mean the broker was really exercised.
enum KafkaTestSupport {
    static var brokers: String {
        get throws { try TestStack.kafkaBrokers() }
    }

    static let logger: Logger = {
        var logger = Logger(label: "kafka-tests")
        logger.logLevel = .error
        return logger
    }()

    static func uniqueName(_ prefix: String) -> String {
        "test.\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
    }

    static func client() throws -> KafkaClientConfiguration {
        KafkaClientConfiguration(bootstrapServers: try brokers, clientID: "kafka-tests")
    }

    static func createTopic(_ name: String, partitions: Int) async throws {
        let admin = try KafkaAdmin(configuration: try client(), logger: logger)
        _ = try await admin.createTopics([KafkaTopicSpecification(name: name, partitions: partitions)])
        await admin.close()
    }

    static func producer(deliveryTimeoutMilliseconds: Int = 10_000) throws -> KafkaProducer {
        try KafkaProducer(
            configuration: KafkaProducerConfiguration(client: try client(), deliveryTimeoutMilliseconds: deliveryTimeoutMilliseconds),
            logger: logger
        )
    }

    /// A consumer with the short group timeouts environment.md recommends for Tansu.
    static func consumer(group: String, topics: [String], startPositions: KafkaConsumer.StartPositionProvider? = nil) throws -> KafkaConsumer {
        try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: try client(), groupID: group, topics: topics,
                sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000,
                maxPollIntervalMilliseconds: 20_000, maxBatchSize: 200
            ),
            startPositions: startPositions,
            logger: logger
        )
    }
}

/// Runs `body` and fails if it takes longer than `limit` (a hang guard, not a speed claim).
func withDeadline<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: limit)
            return nil
        }
        guard let first = try await group.next(), let value = first else {
            group.cancelAll()
            throw DeadlineExceeded(limit: limit)
        }
        group.cancelAll()
        return value
    }
}

struct DeadlineExceeded: Error, CustomStringConvertible {
    let limit: Duration
    var description: String { "did not finish within \(limit)" }
}
