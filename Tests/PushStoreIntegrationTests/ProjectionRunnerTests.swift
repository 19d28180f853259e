import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import ServiceLifecycle
import Testing

@Suite("Projection runner against the real PostgreSQL and broker", .serialized)
struct ProjectionRunnerTests {
    /// A journal runner for `topic` in `group`, with its producer for dead letters.
    private static func runner(topic: String, group: String, postgres: PostgresClient) throws -> (ProjectionRunner<EventJournalProjection>, KafkaProducer) {
        let configuration = try StoreTestSupport.configuration()
        let producer = try KafkaProducer(configuration: configuration.producer, logger: StoreTestSupport.logger)
        let runner = ProjectionRunner(
            projection: EventJournalProjection(name: group, topics: [topic]),
            postgres: postgres,
            consumer: configuration.consumer(group: group),
            deadLetters: DeadLetterPublisher(producer: producer, catalog: configuration.topics, group: group),
            logger: StoreTestSupport.logger
        )
        return (runner, producer)
    }

    @Test("migrations are idempotent and create the documented tables")
    func migrations() async throws {
        try await StoreTestSupport.withPostgres { postgres in
            let again = try await Migrator(client: postgres, logger: StoreTestSupport.logger).migrate(SchemaMigrations.all)
            #expect(again.isEmpty)
            let rows = try await postgres.query(
                "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'push' ORDER BY 1"
            )
            var tables: [String] = []
            for try await name in rows.decode(String.self) { tables.append(name) }
            #expect(tables.contains("consumer_offsets"))
            #expect(tables.contains("event_journal"))
            #expect(tables.contains("schema_migrations"))
            try await Migrator(client: postgres, logger: StoreTestSupport.logger).requireCurrentSchema()
        }
    }

    @Test("a malformed record goes to the dead-letter topic with its reason and the runner keeps going")
    func deadLetters() async throws {
        let topic = StoreTestSupport.uniqueName("dlq")
        let group = StoreTestSupport.uniqueName("dlq-group")
        let run = UUID().uuidString
        try await StoreTestSupport.createTopic(topic, partitions: 1)
        _ = try await StoreTestSupport.produceEvents(topic: topic, run: run, count: 5, range: 0..<5)
        let producer = try KafkaProducer(configuration: try StoreTestSupport.configuration().producer, logger: StoreTestSupport.logger)
        try await producer.send(
            KafkaProducerRecord(
                topic: topic, key: "bad", value: Array(#"{"type": "half an envelope"}"#.utf8), headers: [KafkaHeader(name: "origin", string: "test")]))
        await producer.close()
        _ = try await StoreTestSupport.produceEvents(topic: topic, run: run, count: 5, range: 5..<10)

        try await StoreTestSupport.withPostgres { postgres in
            let (runner, dlqProducer) = try Self.runner(topic: topic, group: group, postgres: postgres)
            let services = ServiceGroup(configuration: .init(services: [.init(service: dlqProducer), .init(service: runner)], logger: StoreTestSupport.logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await services.run() }
                try await eventually(within: .seconds(60), "10 events projected") {
                    try await StoreTestSupport.journalCounts(postgres, run: run).rows == 10
                }
                await services.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
        }

        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: try StoreTestSupport.configuration().kafka, groupID: StoreTestSupport.uniqueName("dlq-reader"), topics: ["\(topic).dlq"],
                sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000),
            logger: StoreTestSupport.logger
        )
        var iterator = consumer.records.makeAsyncIterator()
        let letter = try #require(try await iterator.next())
        await consumer.close()
        #expect(String(decoding: letter.value, as: UTF8.self) == #"{"type": "half an envelope"}"#, "the original bytes are kept")
        #expect(letter.keyString == "bad")
        #expect(letter.headers.string("origin") == "test", "the original headers are kept")
        #expect(letter.headers.string("dlq.source.topic") == topic)
        #expect(letter.headers.string("dlq.source.offset") == "5")
        #expect(letter.headers.string("dlq.consumer.group") == group)
        #expect(letter.headers.string("dlq.reason")?.hasPrefix("malformed_envelope: missing field") == true)
    }

    @Test("two runners in one group share the partitions; one leaves mid-stream; every event is projected exactly once")
    func groupTakeover() async throws {
        let topic = StoreTestSupport.uniqueName("takeover")
        let group = StoreTestSupport.uniqueName("takeover-group")
        let run = UUID().uuidString
        let total = 6_000
        try await StoreTestSupport.createTopic(topic, partitions: 6)

        try await StoreTestSupport.withPostgres { postgres in
            let (first, firstProducer) = try Self.runner(topic: topic, group: group, postgres: postgres)
            let (second, secondProducer) = try Self.runner(topic: topic, group: group, postgres: postgres)
            let firstGroup = ServiceGroup(
                configuration: .init(services: [.init(service: firstProducer), .init(service: first)], logger: StoreTestSupport.logger))
            let secondGroup = ServiceGroup(
                configuration: .init(services: [.init(service: secondProducer), .init(service: second)], logger: StoreTestSupport.logger))
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { try await firstGroup.run() }
                tasks.addTask { try await secondGroup.run() }
                _ = try await StoreTestSupport.produceEvents(topic: topic, run: run, count: total, range: 0..<total / 2)
                try await eventually(within: .seconds(60), "first half projected") {
                    try await StoreTestSupport.journalCounts(postgres, run: run).rows >= total / 4
                }
                // The second member leaves while events are still flowing.
                async let more = StoreTestSupport.produceEvents(topic: topic, run: run, count: total, range: total / 2..<total)
                await secondGroup.triggerGracefulShutdown()
                _ = try await more
                try await eventually(within: .seconds(90), "all events projected") {
                    try await StoreTestSupport.journalCounts(postgres, run: run).rows >= total
                }
                // Give a duplicate, if any, time to show up.
                try await Task.sleep(for: .seconds(2))
                await firstGroup.triggerGracefulShutdown()
                try await tasks.waitForAll()
            }
            let counts = try await StoreTestSupport.journalCounts(postgres, run: run)
            #expect(counts.rows == total, "no event lost and none projected twice")
            #expect(counts.distinct == total)
            let byMember = try await postgres.query("SELECT count(DISTINCT partition)::int FROM push.event_journal WHERE correlation_id = \(run)")
            for try await partitions in byMember.decode(Int.self) { #expect(partitions == 6) }
        }
    }
}
