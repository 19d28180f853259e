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
import _CryptoExtras

/// An FCM simulator over TLS (OAuth token endpoint and HTTP v1 send, in-process: the server the
/// `fcm-simulator` executable runs) trusting a fresh service account, this run's topics and
/// consumer group on the real broker, an Android app whose active credential is that account in
/// the real PostgreSQL, and the environment that points an fcm-sender at all of it.
struct FCMSenderHarness: SenderHarness {
    typealias Message = FCMMessagePlanned
    static let executable = "fcm-sender"
    static let project = "example-project"

    let suffix: String
    let environment: [String: String]
    let configuration: RuntimeConfiguration
    let postgres: PostgresClient
    let simulator: SimulatorServer
    let appId: UUID
    let logger: Logger

    var messageTopic: TopicDefinition { topics.fcmMessages }
    var retryTopic: TopicDefinition { topics.fcmRetries }
    static let settingsPrefix = "FCM_SENDER"

    static func buildSender(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date
    ) throws -> [any Service] {
        try FCMSenderApplication.build(configuration: configuration, environment: environment, postgres: postgres, producer: producer, logger: logger, now: now)
    }

    /// Starts the simulator and PostgreSQL client, creates the topics and the app, runs `body`.
    static func with<T: Sendable>(settings: [String: String] = [:], _ body: @Sendable (FCMSenderHarness) async throws -> T) async throws -> T {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account: [String: String] = [
            "type": "service_account", "project_id": project, "private_key_id": "k1", "private_key": key.pemRepresentation,
            "client_email": "sender@\(project).iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
        ]
        let accountJSON = try JSONSerialization.data(withJSONObject: account)
        let simulator = try await FCMSimulatorServer.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            fcm: FCMBehaviour.Configuration(serviceAccounts: [try FCMServiceAccount(json: accountJSON)]),
            limits: SimulatorLimits(maxConcurrentStreams: 100, logCapacity: 200_000),
            group: ProviderEventLoops.group, logger: Logger(label: "fcm-simulator")
        )
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-ca-\(suffix).pem").path
        try #require(simulator.caCertificatePEM).write(toFile: caFile, atomically: true, encoding: .utf8)

        let environment = try Self.testEnvironment(
            suffix: suffix,
            topics: [
                ("FCM_MESSAGES", "fcm", 4), ("FCM_RETRIES", "fcm-retries", 2), ("FCM_TRANSACTIONAL_MESSAGES", "fcm-tx", 2),
                ("FCM_TRANSACTIONAL_RETRIES", "fcm-tx-retries", 1), ("FCM_THROTTLED", "fcm-throttled", 2), ("MESSAGE_RESULTS", "results", 2),
                ("SUBSCRIPTIONS", "subscriptions", 2),
            ],
            settings: [
                "FCM_SENDER_GROUP": "test.fcm-sender.\(suffix)",
                "FCM_BASE_URL": "https://127.0.0.1:\(simulator.port)",
                "FCM_TOKEN_URL": "https://127.0.0.1:\(simulator.port)/token",
                "FCM_CA_FILE": caFile,
                "FCM_SENDER_RETRY_BASE_MS": "100",
                "FCM_SENDER_RETRY_MAX_MS": "400",
                "FCM_SENDER_CREDENTIAL_COOLDOWN_MS": "100",
            ].merging(settings) { _, new in new }
        )
        let configuration = try RuntimeConfiguration(service: "sender-tests", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        let logger = Self.testLogger()
        let catalog = configuration.topics
        try await Self.createTopics(
            [
                catalog.fcmMessages, catalog.fcmRetries, catalog.fcmTransactionalMessages, catalog.fcmTransactionalRetries, catalog.fcmThrottled,
                catalog.messageResults,
                catalog.subscriptions,
            ], configuration: configuration, logger: logger)
        return try await Self.withPostgres(configuration: configuration, simulator: simulator, logger: logger) { postgres in
            let harness = FCMSenderHarness(
                suffix: suffix, environment: environment, configuration: configuration, postgres: postgres,
                simulator: simulator, appId: UUID(), logger: logger
            )
            try await harness.createApp(accountJSON: String(decoding: accountJSON, as: UTF8.self))
            return try await body(harness)
        }
    }

    /// An Android app of a new service with the service account as its active credential.
    func createApp(accountJSON: String) async throws {
        let serviceId = try await createService()
        try await postgres.query(
            """
            INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, fcm_project_id, created_at, updated_at)
            VALUES (\(appId), \(serviceId), \("key-\(suffix)"), 'android', 'production', 'Test app', \(Self.project), now(), now())
            """,
            logger: logger
        )
        try await setCredential(["kind": "fcm-service-account", "serviceAccount": accountJSON])
    }

    // MARK: messages

    /// A registration token that none of the simulator's fault prefixes (`unreg…`, `quota…`, …) matches.
    static func token() -> String { "token-\(UUID())" }

    /// A data message (or, with `notification`, a notification message) to `token`, `_mId` in its data.
    func message(token: String, validFor seconds: TimeInterval = 3600, notification: Bool = false) -> FCMMessagePlanned {
        let messageId = UUID()
        let id = messageId.uuidString.lowercased()
        let content =
            notification
            ? #""data":{"_mId":"\#(id)","_dId":"d-test","url":"https://example.com"},"notification":{"title":"Hello","body":"World"}"#
            : #""data":{"_mId":"\#(id)","_dId":"d-test","_msg":"World","title":"Hello","url":"https://example.com"}"#
        return FCMMessagePlanned(
            messageId: messageId, broadLogId: nil, deliveryId: "d-test", appId: appId, registrationToken: token, projectId: Self.project, credential: nil,
            message: #"{"token":"\#(token)",\#(content),"android":{"priority":"high","ttl":"86400s"}}"#,
            validUntil: Date().addingTimeInterval(seconds), attempt: 1, plannedAt: Date()
        )
    }
}
