import Crypto
import Foundation
import Kafka
import Logging
import NIOPosix
import PostgresNIO
import ProviderSimulatorCore
import PushEvents
import PushRegistration
import PushRuntime
import PushSending
import PushStore
import ServiceLifecycle
import Synchronization
import Testing

/// An APNs simulator over TLS (in-process, the same server the `apns-simulator` executable runs),
/// this run's topics and consumer group on the real broker, an iOS app with a .p8 key sealed in
/// the real PostgreSQL, and the environment that points an apns-sender at all of it.
struct APNSSenderHarness: Sendable {
    static let teamId = "TEAM123456"
    static let keyId = "KEY1234567"
    static let topic = "com.example.trips"

    let suffix: String
    let environment: [String: String]
    let configuration: RuntimeConfiguration
    let postgres: PostgresClient
    let simulator: SimulatorServer
    let appId: UUID
    /// The .p8 key the simulator trusts (the app's first credential).
    let validKey: P256.Signing.PrivateKey
    let logger: Logger

    var topics: TopicCatalog { configuration.topics }

    /// Starts the simulator and PostgreSQL client, creates the topics and the app, runs `body`.
    /// `clientCAs` (PEM) turn on the simulator's certificate auth beside token auth.
    static func with<T: Sendable>(
        settings: [String: String] = [:], maxConcurrentStreams: Int = 1000, clientCAs: [String] = [],
        _ body: @Sendable (APNSSenderHarness) async throws -> T
    ) async throws -> T {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let key = P256.Signing.PrivateKey()
        let simulator = try await APNsSimulator.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            apns: APNsBehaviour.Configuration(
                allowedTopics: [topic],
                signingKeys: [APNsProviderTokenVerifier.SigningKey(teamID: teamId, keyID: keyId, publicKey: key.publicKey)],
                clientCertificateCAs: clientCAs
            ),
            limits: SimulatorLimits(maxConcurrentStreams: maxConcurrentStreams, logCapacity: 200_000),
            group: MultiThreadedEventLoopGroup.singleton,
            logger: Logger(label: "apns-simulator")
        )
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-ca-\(suffix).pem").path
        try #require(simulator.caCertificatePEM).write(toFile: caFile, atomically: true, encoding: .utf8)

        let base = ProcessInfo.processInfo.environment
        _ = try #require(base["KAFKA_BROKERS"], "KAFKA_BROKERS is not set: run the suite with scripts/test")
        var environment = base
        for (id, name, partitions) in [
            ("APNS_MESSAGES", "apns", 4), ("APNS_RETRIES", "apns-retries", 2), ("MESSAGE_RESULTS", "results", 2), ("SUBSCRIPTIONS", "subscriptions", 2),
        ] {
            environment["PUSH_TOPIC_\(id)"] = "test.sender.\(name).\(suffix)"
            environment["PUSH_TOPIC_\(id)_PARTITIONS"] = String(partitions)
        }
        environment["APNS_SENDER_GROUP"] = "test.apns-sender.\(suffix)"
        environment["APNS_PRODUCTION_URL"] = "https://127.0.0.1:\(simulator.port)"
        environment["APNS_SANDBOX_URL"] = "https://127.0.0.1:\(simulator.port)"
        environment["APNS_CA_FILE"] = caFile
        environment["PUSH_CREDENTIALS_KEY"] = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
        environment["APNS_SENDER_RETRY_BASE_MS"] = "100"
        environment["APNS_SENDER_RETRY_MAX_MS"] = "400"
        environment["APNS_SENDER_CREDENTIAL_COOLDOWN_MS"] = "1500"
        environment["APNS_SENDER_CREDENTIAL_CACHE_MS"] = "300"
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        environment["LOG_LEVEL"] = "error"
        environment.merge(settings) { _, new in new }

        let configuration = try RuntimeConfiguration(service: "sender-tests", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        var logger = Logger(label: "sender-tests")
        logger.logLevel = base["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error
        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        let catalog = configuration.topics
        let used = [catalog.apnsMessages, catalog.apnsRetries, catalog.messageResults, catalog.subscriptions]
        _ = try await admin.createTopics(
            used.map { KafkaTopicSpecification(name: $0.name, partitions: $0.partitions) }
                + used.map { KafkaTopicSpecification(name: "\($0.name).dlq", partitions: 1) }
        )
        await admin.close()

        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        return try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            defer { tasks.cancelAll() }
            do {
                try await Migrator(client: postgres, logger: logger).migrate()
                let appId = UUID()
                let harness = APNSSenderHarness(
                    suffix: suffix, environment: environment, configuration: configuration, postgres: postgres,
                    simulator: simulator, appId: appId, validKey: key, logger: logger
                )
                try await harness.createApp(key: key)
                let result = try await body(harness)
                try await simulator.shutdown()
                return result
            } catch {
                try? await simulator.shutdown()
                throw error
            }
        }
    }

    /// An iOS app of a new service with `key` as its active APNs token credential.
    func createApp(key: P256.Signing.PrivateKey) async throws {
        let serviceId = UUID()
        try await postgres.query(
            "INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES (\(serviceId), \("svc-\(suffix)"), 'Test', now(), now())",
            logger: logger
        )
        try await postgres.query(
            """
            INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id, created_at, updated_at)
            VALUES (\(appId), \(serviceId), \("key-\(suffix)"), 'ios', 'production', 'Test app', \(Self.topic), now(), now())
            """,
            logger: logger
        )
        try await setCredential(teamId: Self.teamId, keyId: Self.keyId, key: key)
    }

    /// Stores a new APNs token credential and makes it the app's active one (what the admin API does).
    func setCredential(teamId: String, keyId: String, key: P256.Signing.PrivateKey) async throws {
        try await setCredential(["kind": "apns-token", "teamId": teamId, "keyId": keyId, "privateKey": key.pemRepresentation])
    }

    /// Stores a PEM client certificate and key as the app's active `apns-certificate` credential.
    func setCredential(certificate: APNsCertificateAuthority.ClientCertificate) async throws {
        try await setCredential([
            "kind": "apns-certificate", "certificatePem": certificate.certificateChainPEM, "privateKeyPem": certificate.privateKeyPEM,
        ])
    }

    /// Seals `secret` (the admin API's credential body) and makes it the app's active credential.
    private func setCredential(_ secret: [String: String]) async throws {
        let cipher = try #require(try CredentialCipher.fromEnvironment(environment))
        let kind = try #require(secret["kind"])
        let sealedSecret = try JSONSerialization.data(withJSONObject: secret)
        let credentialId = UUID()
        let fingerprint = "sha256:" + SHA256.hash(data: sealedSecret).map { String(format: "%02x", $0) }.joined()
        let sealed = try cipher.seal(sealedSecret, appId: appId)
        try await postgres.query(
            """
            INSERT INTO push.app_credentials (credential_id, app_id, kind, fingerprint, ciphertext)
            VALUES (\(credentialId), \(appId), \(kind), \(fingerprint), \(ByteBuffer(data: sealed)))
            """,
            logger: logger
        )
        try await postgres.query(
            "UPDATE push.apps SET credential_id = \(credentialId), credential_kind = \(kind), credential_fingerprint = \(fingerprint), credential_updated_at = now() WHERE app_id = \(appId)",
            logger: logger
        )
    }

    // MARK: messages and results

    /// A valid 32-byte token in hex, its first characters replaced by `prefix` (simulator faults).
    /// Without a prefix, never one of the simulator's fault prefixes (`e503…`, `dead…`: about
    /// one random token in 13,000 would otherwise be refused on purpose).
    static func token(prefix: String = "") -> String {
        while true {
            let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
            let token = prefix + hex.dropFirst(prefix.count)
            if !prefix.isEmpty || APNsTokenPrefix(token: token) == nil { return token }
        }
    }

    func message(token: String, validFor seconds: TimeInterval = 3600, deliveryId: String = "d-test", collapseId: String? = nil) -> APNSMessagePlanned {
        let messageId = UUID()
        return APNSMessagePlanned(
            messageId: messageId, deliveryId: deliveryId, appId: appId, registrationToken: token, environment: "production",
            credential: nil, topic: Self.topic, pushType: "alert", priority: 10, collapseId: collapseId,
            payload: #"{"aps":{"alert":{"title":"Hello","body":"World"}},"_mId":"\#(messageId.uuidString.lowercased())","_dId":"\#(deliveryId)"}"#,
            validUntil: Date().addingTimeInterval(seconds), attempt: 1, plannedAt: Date()
        )
    }

    /// Publishes messages on the run's APNs message topic as the planner does.
    func publish(_ messages: [APNSMessagePlanned]) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let records = try messages.map { message in
            try KafkaProducerRecord(topic: topics.apnsMessages.name, event: EventEnvelope(key: message.recordKey, payload: message))
        }
        for result in await producer.send(records) { _ = try result.get() }
        await producer.close()
    }

    func publishRaw(_ value: String) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        try await producer.send(KafkaProducerRecord(topic: topics.apnsMessages.name, key: Array("raw".utf8), value: Array(value.utf8)))
        await producer.close()
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

    func waitForResults(_ count: Int, within limit: Duration = .seconds(60)) async throws -> [ResultEvent] {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            let results = try await results()
            if results.count >= count { return results }
            try await Task.sleep(for: .milliseconds(200))
        }
        let got = try await results().count
        Issue.record("timed out after \(limit) waiting for \(count) results (got \(got))")
        throw CancellationError()
    }

    // MARK: the sender

    /// Runs an apns-sender in-process (the function the executable calls) while `body` runs.
    func withSender<T: Sendable>(
        settings: [String: String] = [:], now: @escaping @Sendable () -> Date = Date.init,
        _ body: @Sendable () async throws -> T
    ) async throws -> T {
        var environment = self.environment
        environment.merge(settings) { _, new in new }
        let configuration = try RuntimeConfiguration(service: "apns-sender", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let parts = try APNSSenderApplication.build(
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

    /// The real `apns-sender` executable, started next to the test bundle.
    func startExecutable(opsPort: Int, settings: [String: String] = [:]) throws -> Process {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("apns-sender")
        try #require(FileManager.default.isExecutableFile(atPath: binary.path), "apns-sender is not built next to the tests (scripts/test builds it)")
        let process = Process()
        process.executableURL = binary
        var environment = self.environment
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment.merge(settings) { _, new in new }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        return process
    }
}

/// A `MessageSent` / `MessageFailed` / `MessageExpired` record, as a test reads it.
struct ResultEvent: Sendable {
    var messageId: String
    var type: String
    var failureType: String?
    var reason: String?
    var attempts: Int?
    var providerMessageId: String?

    init?(_ record: KafkaConsumerRecord) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any],
              let type = object["type"] as? String, let data = object["data"] as? [String: Any],
              let id = (data["message"] as? [String: Any])?["messageId"] as? String
        else { return nil }
        messageId = id.lowercased()
        self.type = type
        failureType = data["failureType"] as? String
        reason = data["reason"] as? String
        attempts = data["attempts"] as? Int
        providerMessageId = data["providerMessageId"] as? String
    }
}
