import Crypto
import Foundation
import Kafka
import Logging
import NIOPosix
import PostgresNIO
import ProviderSimulatorCore
import PushEvents
import PushRuntime
import PushSending
import ServiceLifecycle
import Testing

/// An APNs simulator over TLS (in-process, the same server the `apns-simulator` executable runs),
/// this run's topics and consumer group on the real broker, an iOS app with a .p8 key sealed in
/// the real PostgreSQL, and the environment that points an apns-sender at all of it.
struct APNSSenderHarness: SenderHarness {
    typealias Message = APNSMessagePlanned
    static let executable = "apns-sender"
    static let teamId = "TEAM123456"
    static let keyId = "KEY1234567"
    static let topic = "com.example.trips"

    let suffix: String
    let environment: [String: String]
    let configuration: RuntimeConfiguration
    let postgres: PostgresClient
    /// The APNs simulator at `APNS_PRODUCTION_URL` (and at `APNS_SANDBOX_URL` too, unless the
    /// harness was made with `separateSandbox`).
    let simulator: SimulatorServer
    /// The simulator at `APNS_SANDBOX_URL`: `simulator` itself, or a second one on its own port.
    let sandboxSimulator: SimulatorServer
    /// The harness's app, in the `production` environment.
    let appId: UUID
    /// The .p8 key the simulator trusts (the app's first credential).
    let validKey: P256.Signing.PrivateKey
    let logger: Logger

    var messageTopic: TopicDefinition { topics.apnsMessages }
    var retryTopic: TopicDefinition { topics.apnsRetries }
    static let settingsPrefix = "APNS_SENDER"

    static func buildSender(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date
    ) throws -> [any Service] {
        try APNSSenderApplication.build(
            configuration: configuration, environment: environment, postgres: postgres, producer: producer, logger: logger, now: now)
    }

    /// Starts the simulator and PostgreSQL client, creates the topics and the app, runs `body`.
    /// `clientCAs` (PEM) turn on the simulator's certificate auth beside token auth.
    /// `separateSandbox` starts a second simulator (same key, same TLS certificate, its own port)
    /// for `APNS_SANDBOX_URL`, so a test can tell which host each message reached.
    /// `maxConcurrentStreams` is 100, not APNs' 1,000: swift-nio-http2 finds a stream by a
    /// linear scan of the open ones, which in the suite's debug build made a fifth of the test
    /// process's CPU at 1,000 (`perf`); senders queue past it as they do for FCM's 100.
    static func with<T: Sendable>(
        settings: [String: String] = [:], maxConcurrentStreams: Int = 100, clientCAs: [String] = [], separateSandbox: Bool = false,
        _ body: @Sendable (APNSSenderHarness) async throws -> T
    ) async throws -> T {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let key = P256.Signing.PrivateKey()
        let tls = try SimulatorTLS.generated()
        func startSimulator() async throws -> SimulatorServer {
            try await APNsSimulatorServer.start(
                server: SimulatorServer.Configuration(tls: tls),
                apns: APNsBehaviour.Configuration(
                    allowedTopics: [topic],
                    signingKeys: [APNsProviderTokenVerifier.SigningKey(teamID: teamId, keyID: keyId, publicKey: key.publicKey)],
                    clientCertificateCAs: clientCAs
                ),
                limits: SimulatorLimits(maxConcurrentStreams: maxConcurrentStreams, logCapacity: 200_000),
                group: ProviderEventLoops.group,
                logger: Logger(label: "apns-simulator")
            )
        }
        let simulator = try await startSimulator()
        let sandboxSimulator: SimulatorServer
        do {
            sandboxSimulator = separateSandbox ? try await startSimulator() : simulator
        } catch {
            try? await simulator.shutdown()
            throw error
        }
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("apns-ca-\(suffix).pem").path
        try #require(simulator.caCertificatePEM).write(toFile: caFile, atomically: true, encoding: .utf8)

        let environment = try Self.testEnvironment(
            suffix: suffix,
            topics: [
                ("APNS_MESSAGES", "apns", 4), ("APNS_RETRIES", "apns-retries", 2), ("APNS_TRANSACTIONAL_MESSAGES", "apns-tx", 2),
                ("APNS_TRANSACTIONAL_RETRIES", "apns-tx-retries", 1), ("APNS_THROTTLED", "apns-throttled", 2), ("MESSAGE_RESULTS", "results", 2),
                ("SUBSCRIPTIONS", "subscriptions", 2),
            ],
            settings: [
                "APNS_SENDER_GROUP": "test.apns-sender.\(suffix)",
                "APNS_PRODUCTION_URL": "https://127.0.0.1:\(simulator.port)",
                "APNS_SANDBOX_URL": "https://127.0.0.1:\(sandboxSimulator.port)",
                "APNS_CA_FILE": caFile,
                "APNS_SENDER_RETRY_BASE_MS": "100",
                "APNS_SENDER_RETRY_MAX_MS": "400",
                "APNS_SENDER_CREDENTIAL_COOLDOWN_MS": "1500",
                "APNS_SENDER_CREDENTIAL_CACHE_MS": "300",
            ].merging(settings) { _, new in new }
        )
        let configuration = try RuntimeConfiguration(service: "sender-tests", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        let logger = Self.testLogger()
        let catalog = configuration.topics
        try await Self.createTopics(
            [
                catalog.apnsMessages, catalog.apnsRetries, catalog.apnsTransactionalMessages, catalog.apnsTransactionalRetries, catalog.apnsThrottled,
                catalog.messageResults, catalog.subscriptions,
            ], configuration: configuration, logger: logger)
        do {
            let result = try await Self.withPostgres(configuration: configuration, simulator: simulator, logger: logger) { postgres in
                let harness = APNSSenderHarness(
                    suffix: suffix, environment: environment, configuration: configuration, postgres: postgres,
                    simulator: simulator, sandboxSimulator: sandboxSimulator, appId: UUID(), validKey: key, logger: logger
                )
                try await harness.createApp(key: key)
                return try await body(harness)
            }
            if separateSandbox { try await sandboxSimulator.shutdown() }
            return result
        } catch {
            if separateSandbox { try? await sandboxSimulator.shutdown() }
            throw error
        }
    }

    /// An iOS app of a new service with `key` as its active APNs token credential.
    func createApp(key: P256.Signing.PrivateKey) async throws {
        let serviceId = try await createService()
        try await insertApp(appId: appId, serviceId: serviceId, environment: "production", integrationKey: "key-\(suffix)")
        try await setCredential(teamId: Self.teamId, keyId: Self.keyId, key: key)
    }

    /// Another iOS app of the harness app's service, in `environment` (`sandbox`|`production`),
    /// with the harness's valid key as its active credential.
    func addApp(environment: String) async throws -> UUID {
        let rows = try await postgres.query("SELECT service_id FROM push.apps WHERE app_id = \(appId)", logger: logger)
        var serviceId: UUID?
        for try await id in rows.decode(UUID.self) { serviceId = id }
        let app = UUID()
        try await insertApp(appId: app, serviceId: try #require(serviceId), environment: environment, integrationKey: "key-\(suffix)-\(app)")
        try await setCredential(teamId: Self.teamId, keyId: Self.keyId, key: validKey, appId: app)
        return app
    }

    private func insertApp(appId: UUID, serviceId: UUID, environment: String, integrationKey: String) async throws {
        try await postgres.query(
            """
            INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id, created_at, updated_at)
            VALUES (\(appId), \(serviceId), \(integrationKey), 'ios', \(environment), 'Test app', \(Self.topic), now(), now())
            """,
            logger: logger
        )
    }

    /// Stores a new APNs token credential and makes it the app's active one (what the admin API does).
    func setCredential(teamId: String, keyId: String, key: P256.Signing.PrivateKey, appId: UUID? = nil) async throws {
        try await setCredential(["kind": "apns-token", "teamId": teamId, "keyId": keyId, "privateKey": key.pemRepresentation], appId: appId)
    }

    /// Stores a PEM client certificate and key as the app's active `apns-certificate` credential.
    func setCredential(certificate: APNsCertificateAuthority.ClientCertificate) async throws {
        try await setCredential([
            "kind": "apns-certificate", "certificatePem": certificate.certificateChainPEM, "privateKeyPem": certificate.privateKeyPEM,
        ])
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

    /// A planned message for the harness's app, or for `app` in `environment` (the planner copies
    /// the app's environment into each message).
    func message(
        token: String, validFor seconds: TimeInterval = 3600, deliveryId: String = "d-test", collapseId: String? = nil,
        app: UUID? = nil, environment: String = "production"
    ) -> APNSMessagePlanned {
        let messageId = UUID()
        return APNSMessagePlanned(
            messageId: messageId, broadLogId: nil, deliveryId: deliveryId, appId: app ?? appId, registrationToken: token, environment: environment,
            credential: nil, topic: Self.topic, pushType: "alert", priority: 10, collapseId: collapseId,
            payload: #"{"aps":{"alert":{"title":"Hello","body":"World"}},"_mId":"\#(messageId.uuidString.lowercased())","_dId":"\#(deliveryId)"}"#,
            validUntil: Date().addingTimeInterval(seconds), attempt: 1, plannedAt: Date()
        )
    }
}
