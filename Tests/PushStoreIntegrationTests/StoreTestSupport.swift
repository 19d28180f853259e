import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import Testing

/// The PostgreSQL server and broker that `scripts/test` starts. Tests fail, never skip, when
/// they are missing. Each test uses its own topics and consumer groups.
enum StoreTestSupport {
    static func configuration() throws -> RuntimeConfiguration {
        try TestStack.require()
        var configuration = try RuntimeConfiguration(service: "store-tests", defaultOpsPort: 0)
        configuration.kafkaSessionTimeoutMilliseconds = 6_000
        return configuration
    }

    static let logger: Logger = {
        var logger = Logger(label: "store-tests")
        logger.logLevel = .error
        return logger
    }()

    static func uniqueName(_ prefix: String) -> String {
        "test.\(prefix).\(UUID().uuidString.prefix(8).lowercased())"
    }

    /// Runs `body` with a running PostgreSQL client on a migrated schema.
    static func withPostgres<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        let client = PostgresClient(configuration: try configuration().postgres.clientConfiguration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all)
            return try await body(client)
        }
    }

    /// Runs `body` with a running client on a new, empty database of the test server named
    /// `<prefix>_<random>` (passed as well, for executables pointed at it; not migrated:
    /// migration tests choose how far), dropped afterwards whether `body` succeeds or throws.
    static func withScratchDatabase(_ prefix: String, _ body: @escaping @Sendable (PostgresClient, String) async throws -> Void) async throws {
        let database = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        func drop() async throws {
            try await withPostgres { main in
                try await main.query(PostgresQuery(unsafeSQL: "DROP DATABASE IF EXISTS \(database) WITH (FORCE)"), logger: logger)
            }
        }
        try await withPostgres { main in
            try await main.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: logger)
        }
        var settings = try configuration().postgres
        settings.database = database
        let client = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: logger)
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask { await client.run() }
                defer { group.cancelAll() }
                try await body(client, database)
            }
        } catch {
            try? await drop()
            throw error
        }
        try await drop()
    }

    /// Creates `topic` and its dead-letter topic.
    static func createTopic(_ topic: String, partitions: Int) async throws {
        let admin = try KafkaAdmin(configuration: try configuration().kafka, logger: logger)
        _ = try await admin.createTopics([
            KafkaTopicSpecification(name: topic, partitions: partitions),
            KafkaTopicSpecification(name: "\(topic).dlq", partitions: 1),
        ])
        await admin.close()
    }

    /// Produces `count` journal events correlated by `run`; returns their event ids.
    static func produceEvents(topic: String, run: String, count: Int, range: Range<Int>? = nil) async throws -> [UUID] {
        let producer = try KafkaProducer(configuration: try configuration().producer, logger: logger)
        let indices = range ?? 0..<count
        let envelopes = indices.map { EventEnvelope(key: "device-\($0 % 50)", payload: TestRecorded(index: $0), correlationId: run) }
        let results = await producer.send(try envelopes.map { KafkaProducerRecord(topic: topic, key: $0.metadata.key, value: try $0.encoded()) })
        await producer.close()
        for result in results { _ = try result.get() }
        return envelopes.map(\.metadata.id)
    }

    /// Rows in the journal for `run`, and how many distinct event ids they hold.
    static func journalCounts(_ postgres: PostgresClient, run: String) async throws -> (rows: Int, distinct: Int) {
        let rows = try await postgres.query("SELECT count(*)::int, count(DISTINCT event_id)::int FROM push.event_journal WHERE correlation_id = \(run)")
        for try await (total, distinct) in rows.decode((Int, Int).self) { return (total, distinct) }
        return (0, 0)
    }
}

struct TestRecorded: PushEvent {
    static let eventType = "TestRecorded"
    static let eventVersion = 1
    var index: Int
}
