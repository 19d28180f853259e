import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushPlanning
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import ServiceLifecycle
import Synchronization
import Testing

/// Runs the delivery planner in-process (the same `PlanningApplication.build` the executable
/// uses) on its own topics and consumer groups, against the real broker and PostgreSQL of
/// `scripts/test`. Services, apps and subscriptions are written straight into their projection
/// tables: they are the planner's input, kept by the registration service in production.
struct PlanningHarness: Sendable {
    let suffix: String
    let postgres: PostgresClient
    let configuration: RuntimeConfiguration
    let logger: Logger

    var topics: TopicCatalog { configuration.topics }

    /// The environment that points a planner at this run's topics and groups (also used to
    /// start the real executable).
    static func environment(suffix: String) throws -> [String: String] {
        try TestStack.require()
        let environment = TestStack.environment
        var overrides = environment
        for (id, name, partitions) in [
            ("DELIVERY_REQUESTS", "requests", 2), ("DELIVERY_REQUESTS_DLQ", "requests.dlq", 1), ("DELIVERY_EVENTS", "delivery-events", 2),
            ("APNS_MESSAGES", "apns", 4), ("FCM_MESSAGES", "fcm", 4), ("APNS_TRANSACTIONAL_MESSAGES", "apns-tx", 2),
            ("FCM_TRANSACTIONAL_MESSAGES", "fcm-tx", 2), ("MESSAGE_RESULTS", "results", 2),
            ("TRACKING", "tracking", 2), ("AUDIT", "audit", 1),
        ] {
            overrides["PUSH_TOPIC_\(id)"] = "test.\(name).\(suffix)"
            overrides["PUSH_TOPIC_\(id)_PARTITIONS"] = String(partitions)
        }
        overrides["PLANNER_INTAKE_GROUP"] = "test.planner.\(suffix)"
        overrides["PLANNER_DELIVERIES_GROUP"] = "test.deliveries.\(suffix)"
        overrides["PLANNER_BROAD_LOG_GROUP"] = "test.broad-log.\(suffix)"
        overrides["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        // The deliveries' admin API on a port of its own per process (two planners in one test).
        overrides["PLANNER_ADMIN_HOST"] = "127.0.0.1"
        overrides["PLANNER_ADMIN_PORT"] = "0"
        return overrides
    }

    static func makeSuffix() -> String { String(UUID().uuidString.prefix(8).lowercased()) }

    /// Creates the run's topics and gives a harness without a running planner.
    static func prepare(suffix: String) async throws -> (RuntimeConfiguration, Logger) {
        var configuration = try RuntimeConfiguration(
            service: "planning-tests", defaultOpsPort: 0, environment: EnvironmentSettings(environment(suffix: suffix)))
        configuration.kafkaSessionTimeoutMilliseconds = 6_000
        var logger = Logger(label: "planning-tests")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        let catalog = configuration.topics
        let dlqs = ([catalog.deliveryEvents, catalog.messageResults, catalog.tracking] + catalog.messageTopics).map {
            KafkaTopicSpecification(name: "\($0.name).dlq", partitions: 1)
        }
        _ = try await admin.createTopics(
            ([
                catalog.deliveryRequests, catalog.deliveryRequestsDLQ, catalog.deliveryEvents, catalog.messageResults, catalog.tracking, catalog.audit,
            ] + catalog.messageTopics).map {
                KafkaTopicSpecification(name: $0.name, partitions: $0.partitions)
            } + dlqs)
        await admin.close()
        return (configuration, logger)
    }

    /// Runs `body` with a planner running; `suffix` names topics and groups (the same suffix is
    /// the same deployment restarted). `more` adds services to run alongside (e.g. another
    /// service's projection), given the run's configuration, client and producer.
    static func run<T: Sendable>(
        suffix: String = makeSuffix(), planner: Bool = true, settings: PlanningSettings = testSettings,
        more: (RuntimeConfiguration, PostgresClient, KafkaProducer, Logger) throws -> [any Service] = { _, _, _, _ in [] },
        _ body: @escaping @Sendable (PlanningHarness) async throws -> T
    ) async throws -> T {
        let (configuration, logger) = try await prepare(suffix: suffix)
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let parts =
            planner
            ? try PlanningApplication.build(
                configuration: configuration, settings: settings, postgres: postgres, producer: producer,
                adminToken: try AdminToken(adminToken), dataKeys: try CredentialCipher.dataKeys(fromEnvironment: TestStack.environment), logger: logger,
                groups: .init(environment: EnvironmentSettings(environment(suffix: suffix)))
            ) : []
        let extra = try more(configuration, postgres, producer, logger)
        let group = ServiceGroup(configuration: .init(services: ([postgres, producer] + parts + extra).map { .init(service: $0) }, logger: logger))
        let harness = PlanningHarness(suffix: suffix, postgres: postgres, configuration: configuration, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
                try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)
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

    static var testSettings: PlanningSettings {
        var settings = PlanningSettings()
        settings.pollIntervalMilliseconds = 100
        settings.chunkSize = 500
        // A port of its own per run (tests that call the admin API choose one: EphemeralPort).
        settings.adminPort = 0
        return settings
    }

    /// The admin API's bearer token in these tests.
    static let adminToken = "planning-test-admin-token"

    // MARK: catalog and subscriptions (projection tables)

    struct TestApp: Sendable {
        var appId: UUID
        var integrationKey: String
        var platform: String
    }

    /// A service with one app per platform given, each declaring `variables`.
    /// A service with one app per platform; `sounds` are the sound files its iOS app declares.
    func defineService(platforms: [String] = ["ios", "android"], variables: [String] = ["url", "mediaUrl"], sounds: [String] = []) async throws -> (
        name: String, apps: [TestApp]
    ) {
        let serviceId = UUID()
        let name = "svc-\(suffix)-\(serviceId.uuidString.prefix(6).lowercased())"
        try await postgres.query(
            "INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES (\(serviceId), \(name), 'Test', now(), now())",
            logger: logger
        )
        let declared = String(decoding: try JSONEncoder().encode(variables), as: UTF8.self)
        let declaredSounds = String(decoding: try JSONEncoder().encode(sounds.map { ["name": $0, "label": $0] }), as: UTF8.self)
        var apps: [TestApp] = []
        for platform in platforms {
            let appId = UUID()
            let key = "key-\(appId.uuidString.prefix(13).lowercased())"
            try await postgres.query(
                """
                INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id, fcm_project_id, variables, sounds,
                                       created_at, updated_at)
                VALUES (\(appId), \(serviceId), \(key), \(platform), 'production', 'Test app',
                        \(platform == "ios" ? "com.example.trips" : nil), \(platform == "android" ? "example-project" : nil), \(declared)::jsonb,
                        \(declaredSounds)::jsonb, now(), now())
                """,
                logger: logger
            )
            apps.append(TestApp(appId: appId, integrationKey: key, platform: platform))
        }
        return (name, apps)
    }

    /// `count` subscriptions of `app`: tokens `<prefix><n>` (hex for iOS), user keys `user<n>`,
    /// params `tier` (gold for even n, silver for odd) and `city` = Lisbon.
    func addSubscriptions(_ app: TestApp, count: Int, first: Int = 1) async throws {
        try await postgres.query(
            """
            INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, registered_at, updated_at)
            SELECT \(app.appId), CASE WHEN \(app.platform) = 'ios' THEN md5(\(app.integrationKey) || g) ELSE 'fcm-' || \(app.integrationKey) || '-' || g END,
                   \(app.platform), 'user' || g,
                   jsonb_build_object('tier', CASE WHEN g % 2 = 0 THEN 'gold' ELSE 'silver' END, 'city', 'Lisbon', 'nickname', 'n' || g),
                   now(), now()
            FROM generate_series(\(first), \(first + count - 1)) AS g
            """,
            logger: logger
        )
    }

    func token(_ app: TestApp, _ n: Int) async throws -> String {
        let rows = try await postgres.query(
            "SELECT registration_token FROM push.subscriptions WHERE app_id = \(app.appId) AND user_key = \("user\(n)")", logger: logger)
        for try await token in rows.decode(String.self) { return token }
        throw CancellationError()
    }

    // MARK: Kafka

    func publishRequest(_ json: String, key: String? = nil) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        try await producer.send(KafkaProducerRecord(topic: topics.deliveryRequests.name, key: key.map { Array($0.utf8) }, value: Array(json.utf8)))
        await producer.close()
    }

    /// Every record of `topic` so far; sealed message records (version 2) opened with their
    /// subjects' keys, as the senders open them, into the members a record in clear has
    /// (`registrationToken`, `payload` or `message`), unless `openSealed` is false.
    func records(_ topic: String, openSealed: Bool = true) async throws -> [KafkaConsumerRecord] {
        let reader = KafkaLogReader(configuration: configuration.kafka, logger: logger)
        let collected = Mutex<[KafkaConsumerRecord]>([])
        try await reader.read(topic: topic) { records in collected.withLock { $0 += records } }
        let records = collected.withLock { $0 }
        guard openSealed, topics.messageTopics.contains(where: { $0.name == topic }) else { return records }
        return try await opened(records)
    }

    /// `records` with each sealed message record's box opened (a box whose key is gone stays sealed).
    func opened(_ records: [KafkaConsumerRecord]) async throws -> [KafkaConsumerRecord] {
        var sealed: [Int: MessageSealing] = [:]
        for (index, record) in records.enumerated() {
            if case .known(let message, _) = try? APNSMessagePlanned.decodeRecord(record.value), let sealing = message.sealing {
                sealed[index] = sealing
            } else if case .known(let message, _) = try? FCMMessagePlanned.decodeRecord(record.value), let sealing = message.sealing {
                sealed[index] = sealing
            }
        }
        let keys = try await SubjectKeys.keys(
            Set(sealed.values.map(\.subjectId)), wrapping: try CredentialCipher.dataKeys(fromEnvironment: TestStack.environment), postgres: postgres,
            logger: logger)
        var result = records
        for (index, sealing) in sealed {
            guard var envelope = try JSONSerialization.jsonObject(with: Data(records[index].value)) as? [String: Any],
                var data = envelope["data"] as? [String: Any], let messageId = (data["messageId"] as? String).flatMap(UUID.init(uuidString:)),
                let key = keys[sealing.subjectId], let (token, content) = sealing.open(messageId: messageId, key: key)
            else { continue }
            for member in ["sealed", "subjectId", "tokenDigest"] { data.removeValue(forKey: member) }
            data["registrationToken"] = token
            data[envelope["type"] as? String == APNSMessagePlanned.eventType ? "payload" : "message"] = content
            envelope["data"] = data
            result[index].value = Array(try JSONSerialization.data(withJSONObject: envelope, options: [.sortedKeys, .withoutEscapingSlashes]))
        }
        return result
    }

    /// The delivery events of this run, decoded loosely as JSON objects.
    func deliveryEvents() async throws -> [[String: Any]] {
        try await records(topics.deliveryEvents.name).compactMap { try JSONSerialization.jsonObject(with: Data($0.value)) as? [String: Any] }
    }

    /// The message records of both lanes.
    func messageRecords(openSealed: Bool = true) async throws -> [KafkaConsumerRecord] {
        var all: [KafkaConsumerRecord] = []
        for topic in topics.messageTopics { all += try await records(topic.name, openSealed: openSealed) }
        return all
    }

    // MARK: database

    func int(_ query: PostgresQuery) async throws -> Int {
        let rows = try await postgres.query(query, logger: logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }

    func text(_ query: PostgresQuery) async throws -> String? {
        let rows = try await postgres.query(query, logger: logger)
        for try await value in rows.decode(String?.self) { return value }
        return nil
    }

    func deliveryStatus(requestId: String) async throws -> String? {
        try await text("SELECT status FROM push.deliveries WHERE request_id = \(requestId)")
    }

    /// Waits until the delivery of `requestId` is planned (its messages are then on the
    /// message topics: the planner publishes every chunk before it plans the last one; their
    /// `broad_log` rows come with the results).
    @discardableResult
    func waitPlanned(_ requestId: String, within limit: Duration = .seconds(60)) async throws -> String {
        try await eventually(within: limit, "delivery \(requestId) planned") {
            try await deliveryStatus(requestId: requestId) == "planned"
        }
        return try await deliveryId(of: requestId)
    }

    /// The delivery id the planner allocated for the request (it must have accepted it).
    func deliveryId(of requestId: String) async throws -> String {
        let id = try await text("SELECT delivery_id FROM push.delivery_plans WHERE request_id = \(requestId)")
        return try #require(id, "request \(requestId) accepted")
    }

    /// A device: its app and its token's digest.
    struct Device: Hashable {
        var appId: UUID
        var tokenDigest: String
    }

    /// The devices a query selects as `(app_id, token_digest)`.
    func devices(_ query: PostgresQuery) async throws -> Set<Device> {
        var found: Set<Device> = []
        for try await (app, digest) in try await postgres.query(query, logger: logger).decode((UUID, String).self) {
            found.insert(Device(appId: app, tokenDigest: digest))
        }
        return found
    }

    /// The messages of a planned delivery as the planner published them on the message topics
    /// (as the senders' results name them), ordered by message id: read by a consumer of a new
    /// group from the topics' beginning until it has the delivery's `targeted` less
    /// `failed_at_planning` (those are results only), then for another half second (a message
    /// published twice would show). Fails the test after `limit`. (`KafkaLogReader` is not used
    /// here: on Tansu, under the load of the whole suite, it ended partitions short.)
    func plannedMessages(_ deliveryId: String, within limit: Duration = .seconds(60)) async throws -> [MessageReference] {
        let expected = try await int(
            "SELECT (targeted - coalesce(failed_at_planning, 0))::int FROM push.deliveries WHERE delivery_id = \(deliveryId) AND status = 'planned'")
        let consumer = try KafkaConsumer(
            configuration: KafkaConsumerConfiguration(
                client: configuration.kafka, groupID: "test.read.\(UUID().uuidString.lowercased())", topics: topics.messageTopics.map(\.name),
                sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000, maxPollIntervalMilliseconds: 60_000, maxBatchSize: 5_000),
            logger: logger)
        let found = ReadMessages()
        let complete = found
        await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { [consumer, expected] in
                for try await batch in consumer.batches {
                    for record in batch where record.headers.string("push-delivery-id") == deliveryId {
                        let message: MessageReference
                        if case .known(let m, _) = try APNSMessagePlanned.decodeRecord(record.value) {
                            message = MessageReference(
                                messageId: m.messageId, broadLogId: m.broadLogId, deliveryId: m.deliveryId, appId: m.appId,
                                tokenDigest: m.sealing?.tokenDigest ?? TokenDigest.of(m.registrationToken), platform: .ios, plannedAt: m.plannedAt,
                                language: m.language, variant: m.variant)
                        } else if case .known(let m, _) = try FCMMessagePlanned.decodeRecord(record.value) {
                            message = MessageReference(
                                messageId: m.messageId, broadLogId: m.broadLogId, deliveryId: m.deliveryId, appId: m.appId,
                                tokenDigest: m.sealing?.tokenDigest ?? TokenDigest.of(m.registrationToken), platform: .android, plannedAt: m.plannedAt,
                                language: m.language, variant: m.variant)
                        } else {
                            continue
                        }
                        found.state.withLock { $0.messages[message.messageId] = message }
                    }
                    let at = found.state.withLock { state in
                        if state.messages.count >= expected { state.complete = state.complete ?? .now }
                        return state.complete
                    }
                    if let at, ContinuousClock.now - at > .milliseconds(500) { return }
                }
            }
            group.addTask { [complete] in
                let deadline = ContinuousClock.now + limit
                while ContinuousClock.now < deadline {
                    if let at = complete.state.withLock({ $0.complete }), ContinuousClock.now - at > .milliseconds(600) { return }
                    try await Task.sleep(for: .milliseconds(100))
                }
            }
            _ = try? await group.next()
            group.cancelAll()
        }
        await consumer.close()
        let messages = found.state.withLock { $0.messages }
        if messages.count < expected {
            Issue.record("\(messages.count) of the \(expected) messages of delivery \(deliveryId) read from the message topics within \(limit)")
        }
        return messages.values.sorted { $0.messageId.uuidString < $1.messageId.uuidString }
    }
}

/// What `plannedMessages` read so far, and when it had them all.
private final class ReadMessages: Sendable {
    struct State {
        var messages: [UUID: MessageReference] = [:]
        var complete: ContinuousClock.Instant?
    }
    let state = Mutex(State())
}
