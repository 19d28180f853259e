import ArgumentParser
import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushSchema
import PushStore
import ServiceLifecycle

/// The operator's command line: schema migrations, topics, and the journal projection.
/// Reads the same environment variables as the services (docs/configuration.md).
@main
struct PushCtlCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pushctl",
        abstract:
            "Operate the push channel: migrations, topics, services and apps, credentials, templates, segments, deliveries, devices, users (erasure), operators and their audit trail, projections, smoke run.",
        subcommands: [
            Migrate.self, Topics.self, Services.self, Apps.self, Credentials.self, DataKeys.self, Templates.self, Segments.self, Deliveries.self, Devices.self,
            Users.self,
            Operators.self, Audit.self,
            Journal.self,
            Projections.self, Logs.self, Smoke.self, Report.self,
        ]
    )
}

/// Shared set-up for subcommands: configuration and a quiet logger.
struct ToolContext {
    let configuration: RuntimeConfiguration
    let logger: Logger

    init(verbose: Bool = false) throws {
        configuration = try RuntimeConfiguration(service: "pushctl", defaultOpsPort: 0)
        var logger = Logger(label: "pushctl")
        logger.logLevel = verbose ? .debug : .warning
        self.logger = logger
    }

    /// Runs `body` with a PostgreSQL client that is running.
    func withPostgres<T: Sendable>(_ body: @escaping @Sendable (PostgresClient) async throws -> T) async throws -> T {
        var quiet = logger
        quiet.logLevel = .error  // PostgresNIO warns when a lease races the pool's start
        let client = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: quiet)
        return try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask {
                await client.run()
                return nil
            }
            defer { group.cancelAll() }
            return try await body(client)
        }
    }
}

struct Migrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Apply the database migrations of schema push (idempotent).")

    func run() async throws {
        let context = try ToolContext()
        let logger = context.logger
        let applied = try await context.withPostgres { client in
            try await Migrator(client: client, logger: logger).migrate(SchemaMigrations.all)
        }
        let version = SchemaMigrations.all.last?.version ?? 0
        print(
            applied.isEmpty
                ? "schema push is current (version \(version))"
                : "applied migrations \(applied.map(String.init).joined(separator: ", ")); schema push is at version \(version)")
    }
}

struct Topics: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create or list the Kafka topics of the topic catalog, or bring their retention to the catalog's.",
        subcommands: [Create.self, ApplyRetention.self, List.self, UpgradeHistory.self]
    )

    /// `retention.ms` as a person reads it.
    static func retention(_ milliseconds: String) -> String {
        guard let value = Int64(milliseconds) else { return "retention.ms \(milliseconds)" }
        if value < 0 { return "retention forever" }
        let days = Double(value) / Double(24 * 3600 * 1000)
        return "retention \(days.formatted(.number.precision(.fractionLength(0...2)))) days"
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create every catalog topic that does not exist yet, with its documented retention (idempotent).",
            discussion: "An existing topic is left as it is: pushctl topics apply-retention brings its retention to the catalog's."
        )

        @Option(help: "Replication factor; -1 takes the broker's default.")
        var replicationFactor: Int = Int(ProcessInfo.processInfo.environment["PUSH_TOPIC_REPLICATION_FACTOR"] ?? "") ?? -1

        func run() async throws {
            let context = try ToolContext()
            let admin = try KafkaAdmin(configuration: context.configuration.kafka, logger: context.logger)
            let topics = context.configuration.topics.all
            let outcome = try await admin.createTopics(
                topics.map {
                    KafkaTopicSpecification(name: $0.name, partitions: $0.partitions, replicationFactor: replicationFactor, config: $0.config)
                })
            await admin.close()
            for topic in topics {
                let state = outcome[topic.name] == .created ? "created" : "exists"
                print(
                    "\(state.padding(toLength: 8, withPad: " ", startingAt: 0)) \(topic.name) (\(topic.partitions) partitions, "
                        + "\(Topics.retention(String(topic.retentionMilliseconds))))")
            }
        }
    }

    struct ApplyRetention: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "apply-retention",
            abstract: "Set retention.ms of every existing catalog topic to the catalog's value, printing each change (idempotent).",
            discussion:
                "Reads each topic's configuration (DescribeConfigs) and changes only retention.ms (IncrementalAlterConfigs), only where it differs. Shortening a retention lets the broker delete older records: docs/events.md, \"Retention\"."
        )

        @Flag(help: "Print what would change without changing it.")
        var dryRun = false

        func run() async throws {
            let context = try ToolContext()
            let admin = try KafkaAdmin(configuration: context.configuration.kafka, logger: context.logger)
            let topics = context.configuration.topics.all
            do {
                let current = try await admin.topicConfigs(topics.map(\.name))
                var changes: [String: [String: String]] = [:]
                for topic in topics {
                    let wanted = String(topic.retentionMilliseconds)
                    guard let configs = current[topic.name] else {
                        print("missing   \(topic.name) (pushctl topics create makes it)")
                        continue
                    }
                    let actual = configs["retention.ms"]
                    if actual == wanted {
                        print("unchanged \(topic.name) (\(Topics.retention(wanted)))")
                        continue
                    }
                    changes[topic.name] = ["retention.ms": wanted]
                    let before = actual.map(Topics.retention) ?? "retention.ms not set (the broker's default)"
                    print("\(dryRun ? "would set" : "set      ") \(topic.name): \(before) -> \(Topics.retention(wanted)) (retention.ms=\(wanted))")
                }
                if !dryRun { try await admin.setTopicConfigs(changes) }
                print("\(changes.count) of \(topics.count) topics \(dryRun ? "would change" : "changed")")
            } catch {
                await admin.close()
                throw error
            }
            await admin.close()
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Show the catalog and what the broker has.")

        func run() async throws {
            let context = try ToolContext()
            let admin = try KafkaAdmin(configuration: context.configuration.kafka, logger: context.logger)
            let existing = try await admin.partitionCounts()
            await admin.close()
            // The name column as wide as the longest name: a name is never cut (scripts read it).
            let width = context.configuration.topics.all.map(\.name.count).max() ?? 0
            for topic in context.configuration.topics.all {
                let actual = existing[topic.name].map { "\($0) partitions" } ?? "missing"
                print(
                    "\(topic.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(actual.padding(toLength: 14, withPad: " ", startingAt: 0)) \(topic.purpose)"
                )
            }
        }
    }
}

struct Journal: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the event-journal projection (push.event_journal) until SIGTERM or SIGINT."
    )

    @Option(name: .customLong("topic"), help: "A topic to journal (repeatable).")
    var topics: [String]

    @Option(help: "Consumer group and projection name.")
    var group: String = "push-event-journal"

    func run() async throws {
        let context = try ToolContext()
        try await Self.runJournal(context: context, topics: topics, group: group)
    }

    static func runJournal(context: ToolContext, topics: [String], group: String, until stop: (@Sendable (PostgresClient) async throws -> Bool)? = nil)
        async throws
    {
        let configuration = context.configuration
        let logger = context.logger
        var quiet = logger
        quiet.logLevel = .error  // PostgresNIO warns when a lease races the pool's start
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: quiet)
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let runner = ProjectionRunner(
            projection: EventJournalProjection(name: group, topics: topics),
            postgres: postgres,
            consumer: configuration.consumer(group: group),
            deadLetters: DeadLetterPublisher(producer: producer, catalog: configuration.topics, group: group),
            logger: logger
        )
        let serviceGroup = ServiceGroup(
            configuration: .init(
                services: [.init(service: postgres), .init(service: producer), .init(service: runner)],
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger
            ))
        guard let stop else {
            try await serviceGroup.run()
            return
        }
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { try await serviceGroup.run() }
            tasks.addTask {
                while try await !stop(postgres) {
                    try await Task.sleep(for: .milliseconds(200))
                }
                await serviceGroup.triggerGracefulShutdown()
            }
            try await tasks.waitForAll()
        }
    }
}

struct Smoke: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Produce events through the Swift client and show them projected in PostgreSQL.",
        discussion:
            "Creates topic push.smoke, produces events plus one malformed record, runs the journal projection until every event is in push.event_journal, and prints what it saw."
    )

    @Option(help: "How many events to produce.")
    var events: Int = 10_000

    @Option(help: "Give up after this many seconds.")
    var timeout: Int = 120

    func run() async throws {
        let context = try ToolContext()
        let configuration = context.configuration
        let topic = "push.smoke"
        let runID = "smoke-\(UUID().uuidString.prefix(8).lowercased())"

        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: context.logger)
        _ = try await admin.createTopics([
            KafkaTopicSpecification(name: topic, partitions: 6, config: ["retention.ms": "-1"]),
            KafkaTopicSpecification(name: "\(topic).dlq", partitions: 1),
        ])
        await admin.close()

        let producer = try KafkaProducer(configuration: configuration.producer, logger: context.logger)
        let clock = ContinuousClock()
        let produceStart = clock.now
        var records = try (0..<events).map { index in
            let envelope = EventEnvelope(key: "device-\(index % 64)", payload: SmokeTested(sequence: index), correlationId: runID)
            return try KafkaProducerRecord(topic: topic, event: envelope)
        }
        records.append(KafkaProducerRecord(topic: topic, key: runID, value: Array("this is not an event".utf8)))
        let failures = await producer.send(records).filter { if case .failure = $0 { true } else { false } }.count
        let produceTime = clock.now - produceStart
        await producer.close()
        guard failures == 0 else { throw ValidationError("\(failures) of \(records.count) records were not stored by the broker") }
        print("produced \(events) events + 1 malformed record to \(topic) in \(produceTime.formatted(.units(allowed: [.milliseconds]))) (run \(runID))")

        let projectStart = clock.now
        let deadline = projectStart + .seconds(timeout)
        let expected = events
        try await Journal.runJournal(context: context, topics: [topic], group: "push-smoke-journal") { postgres in
            let count = try await EventJournalProjection.summary(correlationId: runID, postgres: postgres, logger: context.logger)?.rows ?? 0
            if clock.now > deadline { throw ValidationError("only \(count) of \(expected) events projected after \(timeout) s") }
            return count >= expected
        }
        let projectTime = clock.now - projectStart

        let summary = try await context.withPostgres { postgres in
            try await EventJournalProjection.summary(correlationId: runID, postgres: postgres, logger: context.logger)
        }
        guard let (rowCount, distinct, first, last) = summary else { throw ValidationError("no journal rows for \(runID)") }
        print(
            "projected into push.event_journal in \(projectTime.formatted(.units(allowed: [.milliseconds]))): \(rowCount) rows, \(distinct) distinct event ids, occurred \(first.formatted(.iso8601)) .. \(last.formatted(.iso8601))"
        )
        print("the malformed record went to \(topic).dlq with its reason in the dlq.reason header")
        print("look: psql \"$POSTGRES_URL\" -c \"SELECT type, count(*) FROM push.event_journal WHERE correlation_id = '\(runID)' GROUP BY type\"")
        guard rowCount == events, distinct == events else {
            throw ValidationError("expected \(events) rows and distinct ids, got \(rowCount) and \(distinct)")
        }
    }
}

/// The smoke run's event.
struct SmokeTested: PushEvent {
    static let eventType = "SmokeTested"
    static let eventVersion = 1
    var sequence: Int
}
