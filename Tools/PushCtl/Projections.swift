import ArgumentParser
import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushPlanning
import PushRegistration
import PushRuntime
import PushStore
import PushTracking
import PushWire
import ServiceLifecycle

/// `pushctl projections status | replay`: how far each PostgreSQL projection is behind its
/// topics, and running them until they have caught up (rebuilding the tables of an empty
/// database from Kafka, the source of truth).
struct Projections: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "The PostgreSQL projections: how far behind their topics they are, and replaying them.",
        subcommands: [Status.self, Replay.self]
    )

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Print, per projection, the records of its topics not yet projected into this database."
        )

        func run() async throws {
            let context = try ToolContext()
            let reader = KafkaLogReader(configuration: context.configuration.kafka, logger: context.logger)
            let kinds = ProjectionKind.allCases
            let configuration = context.configuration
            let logger = context.logger
            let lines = try await context.withPostgres { postgres in
                var lines: [String] = []
                for kind in kinds {
                    let progress = try await kind.progress(configuration: configuration, reader: reader, postgres: postgres, logger: logger)
                    lines.append(progress.line(kind))
                }
                return lines
            }
            ProjectionProgress.printHeader()
            lines.forEach { print($0) }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run projections until every record their topics held at the start is projected, then stop.",
            discussion: """
                Each projection resumes from its positions in push.consumer_offsets, so on an empty, migrated \
                database this rebuilds its tables (and the delivery indicators) from the beginning of the topics; \
                on a live database it only catches up, exactly once, beside the running services. It consumes \
                under broker groups of its own (<group>.replay.<run>), so the services keep their partitions. \
                Safe to interrupt or kill and run again.
                """
        )

        @Option(name: .customLong("only"), help: "Replay only these projections (repeatable): \(ProjectionKind.allValueStrings.joined(separator: ", ")).")
        var only: [ProjectionKind] = []

        @Option(help: "Give up (exit status 1) after this many seconds.")
        var timeout: Int = 3_600

        @Option(name: .customLong("quiet-ms"), help: "Caught up means: nothing behind the topics' ends and no new position stored for this long.")
        var quietMilliseconds: Int = 2_000

        func run() async throws {
            let context = try ToolContext()
            let configuration = context.configuration
            let logger = context.logger
            let kinds = only.isEmpty ? ProjectionKind.allCases : ProjectionKind.allCases.filter(only.contains)
            let reader = KafkaLogReader(configuration: configuration.kafka, logger: logger)

            var quiet = logger
            quiet.logLevel = .error  // PostgresNIO warns when a lease races the pool's start
            let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: quiet)
            let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
            // A broker group of its own per run: the services keep their partitions, and a
            // replay started again after a kill does not wait for its dead predecessor's session.
            let run = UUID().uuidString.prefix(8).lowercased()
            // The subscriptions' registrations open with the data keys, wrapped under PUSH_DATA_KEYS_KEY.
            let dataKeys = try CredentialCipher.dataKeys(fromEnvironment: ProcessInfo.processInfo.environment)
            let runners = kinds.map {
                $0.runner(
                    configuration: configuration, postgres: postgres, deadLetterProducer: producer, brokerGroup: "\($0.group()).replay.\(run)",
                    dataKeys: dataKeys, logger: logger)
            }
            let serviceGroup = ServiceGroup(
                configuration: .init(
                    services: [.init(service: postgres), .init(service: producer)] + runners.map { .init(service: $0) },
                    gracefulShutdownSignals: [.sigterm, .sigint],
                    logger: logger
                ))
            let clock = ContinuousClock()
            let start = clock.now
            let deadline = start + .seconds(timeout)
            let quietFor = Duration.milliseconds(quietMilliseconds)
            let outcome = try await withThrowingTaskGroup(of: ReplayOutcome?.self) { tasks in
                tasks.addTask {
                    try await serviceGroup.run()
                    return nil
                }
                tasks.addTask {
                    try await Migrator(client: postgres, logger: logger).requireCurrentSchema()
                    func stored() async throws -> [Int64] {
                        var sums: [Int64] = []
                        for kind in kinds { sums.append(try await kind.storedSum(configuration: configuration, postgres: postgres, logger: logger)) }
                        return sums
                    }
                    let initial = try await stored()
                    var lastStored = initial
                    var firstMove: ContinuousClock.Instant?
                    var lastMove = clock.now
                    var lastPrint = clock.now
                    while true {
                        try await Task.sleep(for: .milliseconds(100))
                        let now = try await stored()
                        if now != lastStored {
                            lastStored = now
                            lastMove = clock.now
                            if firstMove == nil { firstMove = clock.now }
                        }
                        let quiet = clock.now - lastMove >= quietFor
                        let printing = clock.now - lastPrint >= .seconds(5)
                        guard quiet || printing || clock.now >= deadline else { continue }
                        // Quiet as well as at the ends: Tansu 0.6 reports a high watermark short of
                        // the end when the last batch holds several records, so "0 behind" alone
                        // could stop a replay a few records early.
                        var progress: [ProjectionProgress] = []
                        for kind in kinds {
                            progress.append(try await kind.progress(configuration: configuration, reader: reader, postgres: postgres, logger: logger))
                        }
                        let behind = progress.reduce(0) { $0 + $1.behind }
                        if behind == 0, quiet {
                            await serviceGroup.triggerGracefulShutdown()
                            let records = zip(lastStored, initial).reduce(0) { $0 + $1.0 - $1.1 }
                            let busy = firstMove.map { lastMove - $0 } ?? .zero
                            return ReplayOutcome(progress: progress, records: records, busy: busy)
                        }
                        if clock.now >= deadline {
                            await serviceGroup.triggerGracefulShutdown()
                            print("replay: gave up after \(timeout) s with \(behind) records not yet projected")
                            return nil
                        }
                        if printing {
                            lastPrint = clock.now
                            print("replay: \(zip(lastStored, initial).reduce(0) { $0 + $1.0 - $1.1 }) records projected, \(behind) behind")
                        }
                    }
                }
                var result: ReplayOutcome?
                for try await value in tasks {
                    if let value { result = value }
                }
                return result
            }
            guard let outcome else { throw ExitCode.failure }
            print("replay: caught up in \(String(format: "%.1f", (clock.now - start).seconds)) s")
            if outcome.records > 0 {
                // From the first position stored to the last (± 0.1 s): the projections' own pace,
                // without joining the groups and the quiet wait.
                let busy = max(outcome.busy.seconds, 0.1)
                print("replay: \(outcome.records) records projected in \(String(format: "%.2f", busy)) s, \(Int(Double(outcome.records) / busy)) records/s")
            }
            ProjectionProgress.printHeader()
            for (kind, progress) in zip(kinds, outcome.progress) { print(progress.line(kind)) }
        }
    }

    struct ReplayOutcome: Sendable {
        var progress: [ProjectionProgress]
        var records: Int64
        var busy: Duration
    }
}

/// The projections of schema `push` that run inside the services, with the consumer groups
/// the services use (the same environment variables; docs/configuration.md).
enum ProjectionKind: String, CaseIterable, ExpressibleByArgument, Sendable {
    case catalog
    case subscriptions
    case deliveries
    case broadLog = "broad-log"
    case trackingLog = "tracking-log"

    /// Its consumer group (the `consumer_offsets` key) as the owning service reads it.
    func group(_ environment: EnvironmentSettings = EnvironmentSettings()) -> String {
        switch self {
        case .catalog: RegistrationApplication.ProjectionNames(environment: environment).catalog
        case .subscriptions: RegistrationApplication.ProjectionNames(environment: environment).subscriptions
        case .deliveries: PlanningApplication.GroupNames(environment: environment).deliveries
        case .broadLog: PlanningApplication.GroupNames(environment: environment).broadLog
        case .trackingLog: environment.string("TRACKING_LOG_GROUP", default: TrackingSettings().projectionName)
        }
    }

    func topics(_ catalog: TopicCatalog) -> [String] {
        switch self {
        case .catalog: [catalog.catalog.name]
        case .subscriptions: SubscriptionProjection(name: group(), topic: catalog.subscriptions.name, catalogTopic: catalog.catalog.name, wrapping: nil).topics
        case .deliveries: [catalog.deliveryEvents.name]
        case .broadLog: BroadLogProjection(name: group(), catalog: catalog).topics
        case .trackingLog: [catalog.tracking.name]
        }
    }

    /// The runner the owning service starts (same projection, same positions), consuming under
    /// the broker group `brokerGroup` so that it takes no partitions from the services.
    func runner(
        configuration: RuntimeConfiguration, postgres: PostgresClient, deadLetterProducer: KafkaProducer, brokerGroup: String,
        dataKeys: (any DataKeyWrapping)?, logger: Logger
    ) -> any Service {
        let topics = configuration.topics
        let name = group()
        func make<P: Projection>(_ projection: P) -> any Service {
            ProjectionRunner(
                projection: projection, postgres: postgres, consumer: configuration.consumer(group: ""),
                deadLetters: DeadLetterPublisher(producer: deadLetterProducer, catalog: topics, group: name), logger: logger,
                brokerGroup: brokerGroup
            )
        }
        return switch self {
        case .catalog: make(CatalogProjection(name: name, topic: topics.catalog.name))
        case .subscriptions: make(SubscriptionProjection(name: name, topic: topics.subscriptions.name, catalogTopic: topics.catalog.name, wrapping: dataKeys))
        case .deliveries: make(DeliveryProjection(name: name, topic: topics.deliveryEvents.name))
        case .broadLog: make(BroadLogProjection(name: name, catalog: topics))
        case .trackingLog: make(TrackingLogProjection(name: name, topic: topics.tracking.name))
        }
    }

    /// The sum of the next offsets stored for this projection (grows by one per record projected).
    func storedSum(configuration: RuntimeConfiguration, postgres: PostgresClient, logger: Logger) async throws -> Int64 {
        try await ConsumerOffsets.stored(
            group: group(), topics: topics(configuration.topics), postgres: postgres, logger: logger
        ).values.reduce(0, +)
    }

    /// Positions stored for this projection against the topics' watermarks now.
    func progress(configuration: RuntimeConfiguration, reader: KafkaLogReader, postgres: PostgresClient, logger: Logger) async throws -> ProjectionProgress {
        let group = group()
        var progress = ProjectionProgress(group: group)
        for topic in topics(configuration.topics) {
            let marks = try await reader.watermarks(topic: topic)
            var stored: [Int32: Int64] = [:]
            for (position, offset) in try await ConsumerOffsets.stored(
                group: group, topics: [topic], postgres: postgres, logger: logger)
            {
                stored[position.partition] = offset
            }
            for (partition, mark) in marks {
                let position = max(stored[partition] ?? mark.low, mark.low)
                progress.behind += max(0, mark.high - position)
                progress.stored += stored[partition] ?? 0
                progress.held += mark.high - mark.low
            }
        }
        return progress
    }
}

/// One projection's position: records its topics hold, the sum of its stored next offsets, and
/// the records not yet projected.
struct ProjectionProgress: Sendable {
    var group: String
    var held: Int64 = 0
    var stored: Int64 = 0
    var behind: Int64 = 0

    static func printHeader() {
        print("projection      consumer group                        records in topics      behind")
    }

    func line(_ kind: ProjectionKind) -> String {
        func pad(_ text: String, _ width: Int) -> String { text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count) }
        func right(_ value: Int64, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: " ", count: max(0, width - text.count)) + text
        }
        return pad(kind.rawValue, 16) + pad(group, 36) + right(held, 19) + right(behind, 12)
    }
}
