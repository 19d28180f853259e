import Crypto
import Foundation
import Kafka
import Logging
import PostgresNIO
import ProviderSimulatorCore
import PushCredentials
import PushEvents
import PushRuntime
import PushSchema
import PushSending
import PushStore
import PushTestSupport
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What the APNs and FCM sender harnesses share: a provider simulator, this run's topics and
/// consumer group on the real broker, an app in the real PostgreSQL, and the environment that
/// points a sender at all of it. The provider harnesses supply the simulator, the app and the
/// sender's build function; this extension runs senders and reads what they published.
protocol SenderHarness: Sendable {
    /// The planned messages the sender reads (`APNSMessagePlanned`, `FCMMessagePlanned`).
    associatedtype Message: OutgoingMessage

    /// The sender executable built next to the test bundle, also its service name (`fcm-sender`).
    static var executable: String { get }
    /// The sender's parts (`APNSSenderApplication.build`, `FCMSenderApplication.build`).
    static func buildSender(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date
    ) throws -> [any Service]

    var suffix: String { get }
    var environment: [String: String] { get }
    var configuration: RuntimeConfiguration { get }
    var postgres: PostgresClient { get }
    var simulator: SimulatorServer { get }
    var appId: UUID { get }
    var logger: Logger { get }
    /// The topic the planner publishes `Message`s on.
    var messageTopic: TopicDefinition { get }
    /// The sender's retry topic.
    var retryTopic: TopicDefinition { get }
    /// The prefix of the sender's own settings (`APNS_SENDER`, `FCM_SENDER`).
    static var settingsPrefix: String { get }
}

extension SenderHarness {
    var topics: TopicCatalog { configuration.topics }

    // MARK: setting up

    /// The process environment plus this run's topics (`PUSH_TOPIC_<id>` = `test.sender.<name>.<suffix>`),
    /// a fresh credentials key, a short Kafka session (a SIGKILLed member is replaced quickly) and
    /// quiet executables; `settings` last.
    static func testEnvironment(suffix: String, topics: [(id: String, name: String, partitions: Int)], settings: [String: String]) throws -> [String: String] {
        var environment = TestStack.environment
        _ = try TestStack.kafkaBrokers()
        for (id, name, partitions) in topics {
            environment["PUSH_TOPIC_\(id)"] = "test.sender.\(name).\(suffix)"
            environment["PUSH_TOPIC_\(id)_PARTITIONS"] = String(partitions)
        }
        environment["PUSH_CREDENTIALS_KEY"] = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        environment["LOG_LEVEL"] = "error"
        environment.merge(settings) { _, new in new }
        return environment
    }

    /// The tests' logger: `TEST_LOG_LEVEL` (e.g. `info` for Kafka assignments), else errors only.
    static func testLogger() -> Logger {
        var logger = Logger(label: "sender-tests")
        logger.logLevel = ProcessInfo.processInfo.environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        return logger
    }

    /// Creates `used` topics and a one-partition DLQ beside each.
    static func createTopics(_ used: [TopicDefinition], configuration: RuntimeConfiguration, logger: Logger) async throws {
        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        _ = try await admin.createTopics(
            used.map { KafkaTopicSpecification(name: $0.name, partitions: $0.partitions) }
                + used.map { KafkaTopicSpecification(name: "\($0.name).dlq", partitions: 1) }
        )
        await admin.close()
    }

    /// Runs a PostgreSQL client on the migrated schema while `body` runs, then shuts `simulator` down.
    static func withPostgres<T: Sendable>(
        configuration: RuntimeConfiguration, simulator: SimulatorServer, logger: Logger, _ body: @Sendable (PostgresClient) async throws -> T
    ) async throws -> T {
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            defer { tasks.cancelAll() }
            do {
                try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)
                let result = try await body(postgres)
                try await simulator.shutdown()
                return result
            } catch {
                try? await simulator.shutdown()
                throw error
            }
        }
    }

    /// A new service for the app (`push.apps` references it).
    func createService() async throws -> UUID {
        let serviceId = UUID()
        try await postgres.query(
            "INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES (\(serviceId), \("svc-\(suffix)"), 'Test', now(), now())",
            logger: logger
        )
        return serviceId
    }

    /// Seals `secret` (the admin API's credential body, with its `kind`) and makes it the active
    /// credential of `appId` (the harness's app when nil).
    func setCredential(_ secret: [String: String], appId: UUID? = nil) async throws {
        let appId = appId ?? self.appId
        let cipher = try #require(try CredentialCipher.fromEnvironment(environment))
        let kind = try #require(secret["kind"])
        let sealedSecret = try JSONSerialization.data(withJSONObject: secret)
        let credentialId = UUID()
        let fingerprint = "sha256:" + SHA256.hash(data: sealedSecret).map { String(format: "%02x", $0) }.joined()
        let sealed = try cipher.seal(sealedSecret, appId: appId)
        try await postgres.query(
            """
            INSERT INTO push.app_credentials (credential_id, app_id, kind, fingerprint, ciphertext, sealing_key_id)
            VALUES (\(credentialId), \(appId), \(kind), \(fingerprint), \(ByteBuffer(data: sealed.ciphertext)), \(sealed.keyId))
            """,
            logger: logger
        )
        try await postgres.query(
            "UPDATE push.apps SET credential_id = \(credentialId), credential_kind = \(kind), credential_fingerprint = \(fingerprint), credential_updated_at = now() WHERE app_id = \(appId)",
            logger: logger
        )
    }

    /// What the catalog projection does with an `AppDeleted` (docs/registration.md): the app's
    /// row and sealed credentials deleted, the app recorded in `push.deleted_apps`, in one
    /// transaction.
    func deleteApp(_ appId: UUID) async throws {
        try await postgres.withTransaction(logger: logger) { connection in
            try await connection.query("DELETE FROM push.apps WHERE app_id = \(appId)", logger: logger)
            try await connection.query("DELETE FROM push.app_credentials WHERE app_id = \(appId)", logger: logger)
            try await connection.query("INSERT INTO push.deleted_apps (app_id, deleted_at) VALUES (\(appId), now())", logger: logger)
        }
    }

    // MARK: the sender

    /// Runs a sender in-process (the function the executable calls) while `body` runs; callable
    /// again inside `body` for a second instance in the same group.
    func withSender<T: Sendable>(
        settings: [String: String] = [:], now: @escaping @Sendable () -> Date = Date.init,
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        var environment = self.environment
        environment.merge(settings) { _, new in new }
        let configuration = try RuntimeConfiguration(service: Self.executable, defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let parts = try Self.buildSender(
            configuration: configuration, environment: EnvironmentSettings(environment), postgres: postgres,
            producer: producer, logger: logger, now: now
        )
        let group = ServiceGroup(configuration: .init(services: ([producer] + parts).map { .init(service: $0) }, logger: logger))
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask {
                try await group.run()
                return nil
            }
            do {
                let result = try await body()
                await group.triggerGracefulShutdown()
                try await tasks.waitForAll()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                tasks.cancelAll()
                throw error
            }
        }
    }

    /// The real sender executable, started next to the test bundle, its operations endpoints
    /// (/metrics) on `opsPort`.
    func startExecutable(opsPort: Int, settings: [String: String] = [:]) throws -> BuiltExecutable {
        var environment = self.environment
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment.merge(settings) { _, new in new }
        return try BuiltExecutable(Self.executable, environment: environment)
    }

    /// `push_sender_resend_window` from a sender's /metrics, summed over its lanes (a series per
    /// lane): what a SIGKILL now would send again.
    func resendWindow(opsPort: Int) async throws -> Int {
        let value = try await OpsMetrics.value("push_sender_resend_window", port: opsPort)
        return Int(try #require(value, "no push_sender_resend_window in /metrics"))
    }

    /// The sum of the series of a sender's /metrics whose name is `name` and whose labels include
    /// every one of `labels` (`scope="device"`): the lanes' series added up unless a `lane=` label
    /// is given; nil when the sender exports none.
    func metric(_ name: String, labels: [String] = [], opsPort: Int) async throws -> Double? {
        try await OpsMetrics.value(name, labels: labels, port: opsPort)
    }

    // MARK: messages in, what reached the simulator, what was published

    /// Publishes messages on the run's message topic as the planner does (or on `topic`, such
    /// as the retry topic, as a sender does).
    func publish(_ messages: [Message], to topic: TopicDefinition? = nil) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let records = try messages.map { message in
            try KafkaProducerRecord(topic: (topic ?? messageTopic).name, event: EventEnvelope(key: message.recordKey, payload: message))
        }
        for result in await producer.send(records) { _ = try result.get() }
        await producer.close()
    }

    /// Publishes a record that is not an event on the message topic.
    func publishRaw(_ value: String) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        try await producer.send(KafkaProducerRecord(topic: messageTopic.name, key: Array("raw".utf8), value: Array(value.utf8)))
        await producer.close()
    }

    /// Notifications the simulator accepted and logged (its `accepted` counter also counts
    /// answers that are not sends, such as FCM's OAuth token).
    var delivered: Int { min(simulator.state.loggedCount, 1_000_000) }

    /// How many times each message (by the payload's `_mId`) reached the simulator, in order.
    func arrivals(_ messages: [Message]) -> [Int] {
        var counts: [String: Int] = [:]
        for entry in simulator.state.notifications(limit: 1_000_000) {
            if let mId = entry.mId { counts[mId.lowercased(), default: 0] += 1 }
        }
        return messages.map { counts[$0.messageId.uuidString.lowercased()] ?? 0 }
    }

    func records(_ topic: String) async throws -> [KafkaConsumerRecord] {
        let reader = KafkaLogReader(configuration: configuration.kafka, logger: logger)
        let collected = Mutex<[KafkaConsumerRecord]>([])
        try await reader.read(topic: topic) { records in collected.withLock { $0 += records } }
        return collected.withLock { $0 }
    }

    /// The result events so far.
    func results() async throws -> [ResultEvent] {
        try await records(topics.messageResults.name).compactMap(ResultEvent.init)
    }

    /// The result events once they name at least `count` distinct messages (a message sent again
    /// after a crash has a result per send).
    func waitForResults(_ count: Int, within limit: Duration = .seconds(60)) async throws -> [ResultEvent] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let results = try await results()
            if Set(results.map(\.messageId)).count >= count { return results }
            try await Task.sleep(for: .milliseconds(200))
        }
        let got = Set(try await results().map(\.messageId)).count
        Issue.record("timed out after \(limit) waiting for \(count) results (got \(got))")
        throw CancellationError()
    }
}
