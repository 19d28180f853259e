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
import _CryptoExtras

/// The fcm-sender against the real broker, the real PostgreSQL and the FCM simulator over TLS
/// (OAuth token endpoint and HTTP v1 send).
@Suite("FCM sender", .serialized)
struct FCMSenderTests {
    static let project = "example-project"

    /// Starts an FCM simulator trusting a fresh service account, creates the run's topics and an
    /// Android app whose active credential is that account, and runs `body` with an fcm-sender.
    static func withSender<T: Sendable>(now: @escaping @Sendable () -> Date = Date.init, _ body: @Sendable (SenderRun) async throws -> T) async throws -> T {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let key = try _RSA.Signing.PrivateKey(keySize: .bits2048)
        let account: [String: String] = [
            "type": "service_account", "project_id": project, "private_key_id": "k1", "private_key": key.pemRepresentation,
            "client_email": "sender@\(project).iam.gserviceaccount.com", "token_uri": "https://oauth2.googleapis.com/token",
        ]
        let accountJSON = try JSONSerialization.data(withJSONObject: account)
        let simulator = try await FCMSimulator.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            fcm: FCMBehaviour.Configuration(serviceAccounts: [try FCMServiceAccount(json: accountJSON)]),
            limits: SimulatorLimits(maxConcurrentStreams: 100, logCapacity: 100_000),
            group: MultiThreadedEventLoopGroup.singleton, logger: Logger(label: "fcm-simulator")
        )
        let caFile = FileManager.default.temporaryDirectory.appendingPathComponent("fcm-ca-\(suffix).pem").path
        try #require(simulator.caCertificatePEM).write(toFile: caFile, atomically: true, encoding: .utf8)
        var environment = ProcessInfo.processInfo.environment
        _ = try #require(environment["KAFKA_BROKERS"], "KAFKA_BROKERS is not set: run the suite with scripts/test")
        for (id, name, partitions) in [("FCM_MESSAGES", "fcm", 2), ("FCM_RETRIES", "fcm-retries", 2), ("MESSAGE_RESULTS", "results", 2), ("SUBSCRIPTIONS", "subscriptions", 2)] {
            environment["PUSH_TOPIC_\(id)"] = "test.sender.\(name).\(suffix)"
            environment["PUSH_TOPIC_\(id)_PARTITIONS"] = String(partitions)
        }
        environment["FCM_SENDER_GROUP"] = "test.fcm-sender.\(suffix)"
        environment["FCM_BASE_URL"] = "https://127.0.0.1:\(simulator.port)"
        environment["FCM_TOKEN_URL"] = "https://127.0.0.1:\(simulator.port)/token"
        environment["FCM_CA_FILE"] = caFile
        environment["PUSH_CREDENTIALS_KEY"] = Data(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) }).base64EncodedString()
        environment["FCM_SENDER_RETRY_BASE_MS"] = "100"
        environment["FCM_SENDER_RETRY_MAX_MS"] = "400"
        environment["FCM_SENDER_CREDENTIAL_COOLDOWN_MS"] = "100"
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"

        let configuration = try RuntimeConfiguration(service: "fcm-sender", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        var logger = Logger(label: "sender-tests")
        logger.logLevel = .error
        let catalog = configuration.topics
        let used = [catalog.fcmMessages, catalog.fcmRetries, catalog.messageResults, catalog.subscriptions]
        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        _ = try await admin.createTopics(
            used.map { KafkaTopicSpecification(name: $0.name, partitions: $0.partitions) } + used.map { KafkaTopicSpecification(name: "\($0.name).dlq", partitions: 1) }
        )
        await admin.close()

        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        return try await withThrowingTaskGroup(of: T?.self) { tasks in
            tasks.addTask { await postgres.run(); return nil }
            defer { tasks.cancelAll() }
            try await Migrator(client: postgres, logger: logger).migrate()
            let appId = UUID()
            let run = SenderRun(configuration: configuration, postgres: postgres, simulator: simulator, appId: appId, logger: logger)
            try await run.createApp(accountJSON: String(decoding: accountJSON, as: UTF8.self), environment: environment)
            let parts = try FCMSenderApplication.build(
                configuration: configuration, environment: EnvironmentSettings(environment), postgres: postgres, producer: producer, logger: logger, now: now
            )
            let group = ServiceGroup(configuration: .init(services: ([producer] + parts).map { .init(service: $0) }, logger: logger))
            tasks.addTask { try await group.run(); return nil }
            do {
                let result = try await body(run)
                await group.triggerGracefulShutdown()
                try await simulator.shutdown()
                return result
            } catch {
                await group.triggerGracefulShutdown()
                try? await simulator.shutdown()
                throw error
            }
        }
    }

    struct SenderRun: Sendable {
        let configuration: RuntimeConfiguration
        let postgres: PostgresClient
        let simulator: SimulatorServer
        let appId: UUID
        let logger: Logger

        func createApp(accountJSON: String, environment: [String: String]) async throws {
            let serviceId = UUID()
            try await postgres.query("INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES (\(serviceId), \("svc-\(appId)"), 'Test', now(), now())", logger: logger)
            try await postgres.query(
                """
                INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, fcm_project_id, created_at, updated_at)
                VALUES (\(appId), \(serviceId), \("key-\(appId)"), 'android', 'production', 'Test app', \(FCMSenderTests.project), now(), now())
                """,
                logger: logger
            )
            let cipher = try #require(try CredentialCipher.fromEnvironment(environment))
            let secret = try JSONSerialization.data(withJSONObject: ["kind": "fcm-service-account", "serviceAccount": accountJSON])
            let credentialId = UUID()
            let fingerprint = "sha256:" + SHA256.hash(data: secret).map { String(format: "%02x", $0) }.joined()
            try await postgres.query(
                "INSERT INTO push.app_credentials (credential_id, app_id, kind, fingerprint, ciphertext) VALUES (\(credentialId), \(appId), 'fcm-service-account', \(fingerprint), \(ByteBuffer(data: try cipher.seal(secret, appId: appId))))",
                logger: logger
            )
            try await postgres.query("UPDATE push.apps SET credential_id = \(credentialId), credential_kind = 'fcm-service-account', credential_fingerprint = \(fingerprint) WHERE app_id = \(appId)", logger: logger)
        }

        func message(token: String, validFor seconds: TimeInterval = 3600, notification: Bool = false) -> FCMMessagePlanned {
            let messageId = UUID()
            let id = messageId.uuidString.lowercased()
            let content = notification
                ? #""data":{"_mId":"\#(id)","_dId":"d-test","url":"https://example.com"},"notification":{"title":"Hello","body":"World"}"#
                : #""data":{"_mId":"\#(id)","_dId":"d-test","_msg":"World","title":"Hello","url":"https://example.com"}"#
            return FCMMessagePlanned(
                messageId: messageId, deliveryId: "d-test", appId: appId, registrationToken: token, projectId: FCMSenderTests.project, credential: nil,
                message: #"{"token":"\#(token)",\#(content),"android":{"priority":"high","ttl":"86400s"}}"#,
                validUntil: Date().addingTimeInterval(seconds), attempt: 1, plannedAt: Date()
            )
        }

        func publish(_ messages: [FCMMessagePlanned]) async throws {
            let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
            let records = try messages.map { try KafkaProducerRecord(topic: configuration.topics.fcmMessages.name, event: EventEnvelope(key: $0.recordKey, payload: $0)) }
            for result in await producer.send(records) { _ = try result.get() }
            await producer.close()
        }

        func records(_ topic: String) async throws -> [KafkaConsumerRecord] {
            let reader = KafkaLogReader(configuration: configuration.kafka, logger: logger)
            let collected = Mutex<[KafkaConsumerRecord]>([])
            try await reader.read(topic: topic) { records in collected.withLock { $0 += records } }
            return collected.withLock { $0 }
        }

        func waitForResults(_ count: Int, within limit: Duration = .seconds(60)) async throws -> [String: ResultEvent] {
            let deadline = ContinuousClock.now + limit
            while true {
                let results = Dictionary(try await records(configuration.topics.messageResults.name).compactMap(ResultEvent.init).map { ($0.messageId, $0) }) { first, _ in first }
                if results.count >= count { return results }
                if ContinuousClock.now > deadline {
                    Issue.record("timed out waiting for \(count) results, got \(results.count)")
                    throw CancellationError()
                }
                try await Task.sleep(for: .milliseconds(200))
            }
        }
    }

    @Test("each FCM error code leads to its documented action; data and notification messages arrive with _mId")
    func outcomes() async throws {
        try await Self.withSender { run in
            let data = run.message(token: "token-data-\(UUID())")
            let notification = run.message(token: "token-notif-\(UUID())", notification: true)
            let cases: [(FCMMessagePlanned, type: String, failureType: String?, reason: String?)] = [
                (run.message(token: "unreg-\(UUID())"), "MessageFailed", "hard", "UNREGISTERED"),
                (run.message(token: "mismatch-\(UUID())"), "MessageFailed", "hard", "SENDER_ID_MISMATCH"),
                (run.message(token: "invalid-\(UUID())"), "MessageFailed", "hard", "INVALID_ARGUMENT"),
                (run.message(token: "thirdparty-\(UUID())"), "MessageFailed", "soft", "THIRD_PARTY_AUTH_ERROR"),
                // (QUOTA_EXCEEDED pauses the whole project for at least 60 s: `quotaPause` below.)
                (run.message(token: "internal-\(UUID())", validFor: 10), "MessageExpired", nil, nil),
            ]
            try await run.publish([data, notification] + cases.map(\.0))
            let results = try await run.waitForResults(2 + cases.count)
            for sent in [data, notification] {
                let result = try #require(results[sent.messageId.uuidString.lowercased()])
                #expect(result.type == "MessageSent")
                #expect(result.providerMessageId?.hasPrefix("projects/\(Self.project)/messages/") == true)
                #expect(run.simulator.state.notifications(mId: sent.messageId.uuidString.lowercased()).count == 1)
            }
            for (message, type, failureType, reason) in cases {
                let result = try #require(results[message.messageId.uuidString.lowercased()], "no result for \(message.registrationToken)")
                #expect(result.type == type, "\(message.registrationToken)")
                if let failureType { #expect(result.failureType == failureType, "\(message.registrationToken)") }
                if let reason { #expect(result.reason == reason, "\(message.registrationToken)") }
            }
            // Hard failures quarantine the token; the others do not.
            let disabled = try await run.records(run.configuration.topics.subscriptions.name).compactMap { record -> String? in
                let object = try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any]
                return (object?["data"] as? [String: Any])?["registrationToken"] as? String
            }
            #expect(Set(disabled) == Set(cases.filter { $0.failureType == "hard" }.map(\.0.registrationToken)))
            // The internal error was tried more than once before expiring.
            #expect(run.simulator.state.counters.byReason["INTERNAL", default: 0] >= 2)
        }
    }

    @Test("QUOTA_EXCEEDED pauses the project for 60 s: its messages wait on the retry topic, not in flight, then are sent once each")
    func quotaPause() async throws {
        let clock = TestClock()
        try await Self.withSender(now: clock.now) { run in
            _ = run.simulator.state.updateFaults { $0.burst429 = 1 }
            let first = run.message(token: "token-first-\(UUID())")
            try await run.publish([first])
            try await Self.eventually("the first send meets the quota") { run.simulator.state.counters.byReason["QUOTA_EXCEEDED", default: 0] == 1 }

            // While the project is paused, its messages are deferred to the retry topic without
            // a request to FCM, and the instance's in-flight slots stay free.
            let rest = (0..<20).map { _ in run.message(token: "token-\(UUID())") }
            try await run.publish(rest)
            try await Self.eventually("every message waits on the retry topic") {
                try await run.records(run.configuration.topics.fcmRetries.name).count >= 1 + rest.count
            }
            #expect(run.simulator.state.notifications().isEmpty, "nothing reaches FCM while the project is paused")
            #expect(run.simulator.state.counters.byReason["QUOTA_EXCEEDED", default: 0] == 1)
            #expect(try await run.records(run.configuration.topics.messageResults.name).isEmpty)

            // The pause ends (60 s, the floor for QUOTA_EXCEEDED): each message is sent once.
            clock.advance(by: 61)
            let results = try await run.waitForResults(1 + rest.count)
            for message in [first] + rest {
                let id = message.messageId.uuidString.lowercased()
                #expect(results[id]?.type == "MessageSent")
                #expect(run.simulator.state.notifications(mId: id).count == 1)
            }
            // The refused send counts as an attempt; the deferred ones do not.
            #expect(results[first.messageId.uuidString.lowercased()]?.attempts == 2)
            #expect(rest.allSatisfy { results[$0.messageId.uuidString.lowercased()]?.attempts == 1 })
        }
    }

    static func eventually(within limit: Duration = .seconds(30), _ what: String, _ condition: () async throws -> Bool) async throws {
        let deadline = ContinuousClock.now + limit
        while ContinuousClock.now < deadline {
            if try await condition() { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out after \(limit): \(what)")
        throw CancellationError()
    }
}

/// Wall-clock time plus an offset the test moves forward (the sender's and the FCM client's clock).
final class TestClock: Sendable {
    private let offset = Mutex<TimeInterval>(0)

    var now: @Sendable () -> Date {
        { Date().addingTimeInterval(self.offset.withLock { $0 }) }
    }

    func advance(by seconds: TimeInterval) {
        offset.withLock { $0 += seconds }
    }
}
