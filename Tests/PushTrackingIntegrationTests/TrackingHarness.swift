import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import PushTracking
import ServiceLifecycle
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
    import PushTestSupport
#endif

/// Runs the tracking-ingestion service in-process (the same `TrackingApplication.build` the
/// executable uses) on its own topic and projection, against the real broker and PostgreSQL of
/// `scripts/test`.
struct TrackingHarness: Sendable {
    let suffix: String
    let baseURL: URL
    let postgres: PostgresClient
    let configuration: RuntimeConfiguration
    let settings: TrackingSettings
    let logger: Logger

    /// A free port for a server of the test (`EphemeralPort`).
    static func port() throws -> Int { try EphemeralPort.next() }

    static var logger: Logger {
        var logger = Logger(label: "tracking-tests")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return logger
    }

    static func uniqueSuffix() -> String { String(UUID().uuidString.prefix(8).lowercased()) }

    /// The configuration of a run named `suffix`: its own `push.tracking` (with `partitions`).
    static func configuration(suffix: String, partitions: Int = 3, brokers: String? = nil) throws -> RuntimeConfiguration {
        try TestStack.require()
        let environment = TestStack.environment
        var overrides = environment
        overrides["PUSH_TOPIC_TRACKING"] = "test.tracking.\(suffix)"
        overrides["PUSH_TOPIC_TRACKING_PARTITIONS"] = String(partitions)
        if let brokers { overrides["KAFKA_BROKERS"] = brokers }
        var configuration = try RuntimeConfiguration(service: "tracking-tests", defaultOpsPort: 0, environment: EnvironmentSettings(overrides))
        configuration.kafkaSessionTimeoutMilliseconds = 6_000
        return configuration
    }

    /// Creates the run's tracking topic and its dead-letter topic.
    static func createTopics(_ configuration: RuntimeConfiguration) async throws {
        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        let topic = configuration.topics.tracking
        _ = try await admin.createTopics([
            KafkaTopicSpecification(name: topic.name, partitions: topic.partitions),
            KafkaTopicSpecification(name: configuration.topics.dlq(for: topic.name), partitions: 1),
        ])
        await admin.close()
    }

    /// Runs the whole service (endpoint and projection) while `body` runs, then shuts it down
    /// gracefully. Runs with the same `suffix` share the topic and the projection (a restart).
    static func run<T: Sendable>(
        suffix: String = uniqueSuffix(), partitions: Int = 3, settings: TrackingSettings = TrackingSettings(),
        _ body: @escaping @Sendable (TrackingHarness) async throws -> T
    ) async throws -> T {
        let configuration = try configuration(suffix: suffix, partitions: partitions)
        try await createTopics(configuration)
        var settings = settings
        settings.host = "127.0.0.1"
        settings.port = try port()
        settings.projectionName = "test.tracking-log.\(suffix)"
        let logger = Self.logger
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        let deadLetters = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let parts = try TrackingApplication.build(
            configuration: configuration, settings: settings, postgres: postgres, deadLetterProducer: deadLetters, logger: logger
        )
        let group = ServiceGroup(configuration: .init(services: ([postgres, deadLetters] + parts).map { .init(service: $0) }, logger: logger))
        let harness = TrackingHarness(
            suffix: suffix, baseURL: URL(string: "http://127.0.0.1:\(settings.port)")!, postgres: postgres,
            configuration: configuration, settings: settings, logger: logger
        )
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
                try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)
                try await harness.waitUntilListening()
                let result = try await body(harness)
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            } catch {
                tasks.cancelAll()
                throw error
            }
        }
    }

    /// Runs `body` with a PostgreSQL client and no service (to change the database between runs).
    static func withPostgres(_ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        let configuration = try configuration(suffix: uniqueSuffix())
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            defer { tasks.cancelAll() }
            try await body(postgres)
        }
    }

    // MARK: HTTP

    struct Answer: Sendable {
        var status: Int
        var body: String
    }

    /// `GET <path>?<query>` with the query sent as it is (the SDKs do not encode the commas).
    func get(_ query: String, path: String = "/r/") async throws -> Answer {
        try await Self.get(baseURL: baseURL, path: path, query: query)
    }

    static func get(baseURL: URL, path: String = "/r/", query: String) async throws -> Answer {
        let url = try #require(URL(string: baseURL.absoluteString + path + (query.isEmpty ? "" : "?" + query)))
        var request = URLRequest(url: url)
        request.timeoutInterval = 30
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return Answer(status: http.statusCode, body: String(decoding: data, as: UTF8.self))
    }

    func waitUntilListening() async throws {
        try await eventually(within: .seconds(10), "the HTTP server listens") {
            (try? await get("", path: "/not-a-route")) != nil
        }
    }

    // MARK: Kafka

    var topic: String { configuration.topics.tracking.name }
    var deadLetterTopic: String { configuration.topics.dlq(for: topic) }

    /// Publishes records to the run's tracking topic as they are.
    func publish(_ records: [(key: String, value: [UInt8])]) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let results = await producer.send(records.map { KafkaProducerRecord(topic: topic, key: $0.key, value: $0.value) })
        await producer.close()
        for result in results { _ = try result.get() }
    }

    /// Publishes hit events as the endpoint does.
    func publish(_ hits: [TrackingHitRecorded]) async throws {
        try await publish(
            hits.map { hit in
                (hit.messageId, try EventEnvelope(key: hit.messageId, payload: hit, id: hit.trackingId, occurredAt: hit.occurredAt).encoded())
            })
    }

    /// Reads `topic` from the beginning with a fresh group until `until` holds for what was
    /// read or `limit` passes; returns what was read.
    func read(_ topic: String, within limit: Duration = .seconds(30), until: @escaping @Sendable ([KafkaConsumerRecord]) -> Bool) async throws
        -> [KafkaConsumerRecord]
    {
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: configuration.kafka, groupID: "test.reader.\(UUID().uuidString.prefix(8))", topics: [topic],
                sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000
            ),
            logger: logger
        )
        let records = await withTaskGroup(of: [KafkaConsumerRecord]?.self) { tasks in
            tasks.addTask {
                var read: [KafkaConsumerRecord] = []
                do {
                    for try await batch in consumer.batches {
                        read += batch
                        if until(read) { break }
                    }
                } catch {}
                return read
            }
            tasks.addTask {
                try? await Task.sleep(for: limit)
                return nil
            }
            // The first to finish decides; a cancelled reader returns what it has read.
            let first = await tasks.next() ?? nil
            tasks.cancelAll()
            if let first { return first }
            while let next = await tasks.next() {
                if let next { return next }
            }
            return []
        }
        await consumer.close()
        return records
    }

    /// Decodes tracking events from records.
    static func hits(_ records: [KafkaConsumerRecord]) throws -> [(key: String?, metadata: EventMetadata, hit: TrackingHitRecorded)] {
        var decoder = EventDecoder<TrackingHitRecorded>()
        decoder.register(TrackingHitRecorded.self) { hit, _ in hit }
        return try records.map { record in
            guard case .known(let hit, let metadata) = try decoder.decode(record.value) else {
                throw CancellationError()
            }
            return (record.keyString, metadata, hit)
        }
    }

    // MARK: database

    func count(_ query: PostgresQuery) async throws -> Int {
        let rows = try await postgres.query(query, logger: logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }

    /// A delivery id the channel issued, as the planner records one (`push.delivery_plans`):
    /// `GET /r/` stores hits only for such ids. Drawn far above the planner's own sequence.
    /// `id`, when given, is issued as it is.
    func issueDeliveryId(_ id: String? = nil) async throws -> String { try await Self.issueDeliveryId(postgres, id: id) }

    static func issueDeliveryId(_ postgres: PostgresClient, id given: String? = nil) async throws -> String {
        while true {
            let id = given ?? String(Int32.random(in: 1_000_000_000...Int32.max))
            let rows = try await postgres.query(
                """
                INSERT INTO push.delivery_plans (delivery_id, request_id, accepted, status, send_at)
                VALUES (\(id), \("tracking-test-" + id), '{}', 'planned', now()) ON CONFLICT DO NOTHING RETURNING delivery_id
                """,
                logger: logger)
            for try await _ in rows { return id }
            if given != nil { return id }
        }
    }

    /// The `tracking_log` rows of `deliveryId`, as (message_id, message_id_form, tag_id, kind, tracking_id).
    func rows(deliveryId: String) async throws -> [Row] {
        let rows = try await postgres.query(
            """
            SELECT tracking_id, message_id, message_id_form, delivery_id, tag_id, kind, occurred_at
            FROM push.tracking_log WHERE delivery_id = \(deliveryId) ORDER BY occurred_at, tracking_id
            """,
            logger: logger
        )
        var result: [Row] = []
        for try await (trackingId, messageId, form, delivery, tag, kind, occurredAt) in rows.decode((UUID, String, String, String, Int32, String, Date).self) {
            result.append(
                Row(trackingId: trackingId, messageId: messageId, messageIdForm: form, deliveryId: delivery, tagId: tag, kind: kind, occurredAt: occurredAt))
        }
        return result
    }

    struct Row: Sendable, Hashable {
        var trackingId: UUID
        var messageId: String
        var messageIdForm: String
        var deliveryId: String
        var tagId: Int32
        var kind: String
        var occurredAt: Date
    }
}
