import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushRegistration
import PushRuntime
import PushSchema
import PushStore
import PushTestSupport
import ServiceLifecycle
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
    import PushTestSupport
#endif

/// Runs the registration service in-process (the same `RegistrationApplication.build` the
/// executable uses) on its own topics, against the real broker and PostgreSQL of `scripts/test`.
struct RegistrationHarness: Sendable {
    let suffix: String
    let baseURL: URL
    /// Where the admin API answers: `baseURL`, or its own port when the settings give one.
    var adminURL: URL
    let postgres: PostgresClient
    let configuration: RuntimeConfiguration
    let logger: Logger

    static let adminToken = "test-admin-token-0123456789"
    /// 32 bytes, base64: the tests' credential sealing key.
    static let credentialKey = Data((0..<32).map { UInt8($0) }).base64EncodedString()

    /// Brings a scratch database's schema to the current version (before `run` starts services
    /// on it, as `scripts/stack up` does for the shared one).
    static func migrate(_ database: ScratchDatabase) async throws {
        var environment = TestStack.environment
        environment["POSTGRES_URL"] = database.url
        let configuration = try RuntimeConfiguration(service: "registration-tests", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        let logger = Logger(label: "registration-tests")
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            defer { tasks.cancelAll() }
            try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)
        }
    }

    /// - Parameter suffix: names this run's topics and projections; runs with the same suffix
    ///   share them (a restart of the same service).
    static func run<T: Sendable>(
        settings: RegistrationSettings = RegistrationSettings(), suffix: String = String(UUID().uuidString.prefix(8).lowercased()),
        environment extra: [String: String] = [:], _ body: @escaping @Sendable (RegistrationHarness) async throws -> T
    ) async throws -> T {
        try TestStack.require()
        let environment = TestStack.environment
        var overrides = environment
        overrides["PUSH_TOPIC_SUBSCRIPTIONS"] = "test.subscriptions.\(suffix)"
        overrides["PUSH_TOPIC_CATALOG"] = "test.catalog.\(suffix)"
        overrides["PUSH_TOPIC_AUDIT"] = "test.audit.\(suffix)"
        overrides.merge(extra) { _, given in given }
        var configuration = try RuntimeConfiguration(service: "registration-tests", defaultOpsPort: 0, environment: EnvironmentSettings(overrides))
        configuration.kafkaSessionTimeoutMilliseconds = 6_000
        var logger = Logger(label: "registration-tests")
        logger.logLevel = environment["TEST_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .error

        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        _ = try await admin.createTopics(
            [configuration.topics.subscriptions, configuration.topics.catalog, configuration.topics.audit].flatMap {
                [KafkaTopicSpecification(name: $0.name, partitions: $0.partitions), KafkaTopicSpecification(name: "\($0.name).dlq", partitions: 1)]
            })
        await admin.close()

        var settings = settings
        settings.host = "127.0.0.1"
        settings.port = try EphemeralPort.next()
        if settings.adminPort != nil {
            settings.adminPort = try EphemeralPort.next()
            settings.adminHost = "127.0.0.1"
        }
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let parts = try RegistrationApplication.build(
            configuration: configuration, settings: settings, postgres: postgres, deadLetterProducer: producer, adminToken: try AdminToken(adminToken),
            credentialCipher: try CredentialCipher(keyBase64: credentialKey), dataKeys: try CredentialCipher.dataKeys(fromEnvironment: overrides),
            logger: logger,
            projections: .init(
                catalog: "test.catalog-projection.\(suffix)", subscriptions: "test.subscriptions-projection.\(suffix)",
                audit: "test.audit-projection.\(suffix)")
        )
        let group = ServiceGroup(
            configuration: .init(
                services: ([postgres, producer] + parts).map { .init(service: $0) },
                logger: logger
            ))
        let harness = RegistrationHarness(
            suffix: suffix,
            baseURL: URL(string: "http://127.0.0.1:\(settings.port)")!,
            adminURL: URL(string: "http://127.0.0.1:\(settings.adminPort ?? settings.port)")!, postgres: postgres, configuration: configuration,
            logger: logger
        )
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

    // MARK: catalog

    /// The internal name of the service `appId` belongs to.
    func serviceName(of appId: UUID) async throws -> String {
        let rows = try await postgres.query(
            "SELECT s.name FROM push.services s JOIN push.apps a USING (service_id) WHERE a.app_id = \(appId)", logger: logger)
        for try await name in rows.decode(String.self) { return name }
        throw ServiceNotFound(appId: appId)
    }

    struct ServiceNotFound: Error { var appId: UUID }

    /// Defines a service and an app by publishing catalog events (what the admin API does),
    /// then waits until the app is in `push.apps`.
    func defineApp(platform: Platform, integrationKey: String = "key-\(UUID().uuidString.prefix(12))", keptParameters: [String] = []) async throws -> (
        appId: UUID, integrationKey: String
    ) {
        let serviceId = UUID()
        let appId = UUID()
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let topic = configuration.topics.catalog.name
        let service = EventEnvelope(key: "service:\(serviceId)", payload: ServiceDefined(serviceId: serviceId, name: "svc-\(serviceId)", label: "Test"))
        let app = EventEnvelope(
            key: "app:\(appId)",
            payload: AppDefined(
                appId: appId, serviceId: serviceId, platform: platform, integrationKey: integrationKey, label: "Test app",
                environment: "production", bundleId: platform == .ios ? "com.example.app" : nil,
                fcmProjectId: platform == .android ? "example-project" : nil, variables: ["url"], sounds: [],
                subscriptionParameters: keptParameters.map { .init(name: $0, type: "string") }
            ))
        for result in await producer.send([
            KafkaProducerRecord(topic: topic, key: service.metadata.key, value: try service.encoded()),
            KafkaProducerRecord(topic: topic, key: app.metadata.key, value: try app.encoded()),
        ]) { _ = try result.get() }
        await producer.close()
        try await eventually("app \(integrationKey) in push.apps") {
            try await count("SELECT count(*)::int FROM push.apps WHERE app_id = \(appId)") == 1
        }
        return (appId, integrationKey)
    }

    /// Publishes a registration as the service does, with a chosen time.
    func publishRegistration(appId: UUID, token: String, registeredAt: Date) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let key = SubscriptionRegistered.key(appId: appId, registrationToken: token)
        let event = EventEnvelope(
            key: key,
            payload: SubscriptionRegistered(
                appId: appId, integrationKey: "k", platform: .ios, registrationToken: token, userKey: "", deviceImei: nil,
                deviceName: "", deviceModel: "", deviceBrand: "", deviceManufacturer: "", osName: "", osVersion: "", osLanguage: "",
                params: [:], registeredAt: registeredAt
            ))
        try await producer.send(KafkaProducerRecord(topic: configuration.topics.subscriptions.name, key: key, value: try event.encoded()))
        await producer.close()
    }

    /// Publishes a quarantine as the senders do, at `disabledAt` (the event's `occurredAt`):
    /// version 2 (the device by digest, key `<appId>:<tokenDigest>`), or version 1 (the token in
    /// clear, key `<appId>:<token>`) as senders wrote it before records were sealed.
    func disable(appId: UUID, token: String, reason: String, invalidSince: Date, disabledAt: Date = Date(), version: Int = 2) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let key: String
        let value: [UInt8]
        if version == 1 {
            key = SubscriptionRegistered.key(appId: appId, registrationToken: token)
            value = try EventEnvelope(
                key: key, payload: SubscriptionDisabledV1(appId: appId, registrationToken: token, reason: reason, invalidSince: invalidSince),
                occurredAt: disabledAt
            ).encoded()
        } else {
            let digest = TokenDigest.of(token)
            key = TokenDigest.subscriptionKey(appId: appId, tokenDigest: digest)
            value = try EventEnvelope(
                key: key, payload: SubscriptionDisabled(appId: appId, tokenDigest: digest, reason: reason, invalidSince: invalidSince), occurredAt: disabledAt
            ).encoded()
        }
        try await producer.send(KafkaProducerRecord(topic: configuration.topics.subscriptions.name, key: key, value: value))
        await producer.close()
    }

    // MARK: HTTP

    struct Answer: Sendable {
        var status: Int
        var body: String
        var retryAfter: String?
    }

    /// An admin API call with the bearer token (or `token`), JSON in and out.
    func admin(_ method: String, _ path: String, json: String? = nil, token: String? = RegistrationHarness.adminToken) async throws -> Answer {
        // A query (`?userKey=…`) is kept as a query, not escaped into the path.
        let parts = path.split(separator: "?", maxSplits: 1).map(String.init)
        var components = URLComponents(url: adminURL.appendingPathComponent("admin/v1" + parts[0]), resolvingAgainstBaseURL: false)!
        if parts.count == 2 { components.percentEncodedQuery = parts[1] }
        var request = URLRequest(url: components.url!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(json.utf8)
        }
        request.timeoutInterval = 30
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return Answer(status: http.statusCode, body: String(decoding: data, as: UTF8.self), retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
    }

    func post(_ path: String, body: String, query: String? = nil, headers: [String: String] = [:]) async throws -> Answer {
        var components = URLComponents(url: baseURL.appendingPathComponent(path), resolvingAgainstBaseURL: false)!
        if let query { components.percentEncodedQuery = query }
        var request = URLRequest(url: components.url!)
        request.httpMethod = "POST"
        request.setValue("application/x-www-form-urlencoded;charset=UTF-8", forHTTPHeaderField: "Content-Type")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        request.httpBody = Data(body.utf8)
        request.timeoutInterval = 30
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return Answer(status: http.statusCode, body: String(decoding: data, as: UTF8.self), retryAfter: http.value(forHTTPHeaderField: "Retry-After"))
    }

    // MARK: database

    /// Every record of `topic` so far.
    func records(_ topic: String) async throws -> [KafkaConsumerRecord] {
        let reader = KafkaLogReader(configuration: configuration.kafka, logger: logger)
        let collected = Mutex<[KafkaConsumerRecord]>([])
        try await reader.read(topic: topic) { records in collected.withLock { $0 += records } }
        return collected.withLock { $0 }
    }

    func count(_ query: PostgresQuery) async throws -> Int {
        let rows = try await postgres.query(query, logger: logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }

    /// Waits for the row of (app, token) and returns its columns as text.
    func subscription(appId: UUID, token: String) async throws -> [String: String]? {
        let rows = try await postgres.query(
            """
            SELECT json_build_object('platform', platform, 'user_key', user_key, 'device_imei', device_imei, 'device_name', device_name,
                'device_model', device_model, 'device_brand', device_brand, 'device_manufacturer', device_manufacturer,
                'os_name', os_name, 'os_version', os_version, 'os_language', os_language, 'params', params::text,
                'disabled', disabled::text, 'disabled_reason', disabled_reason)::text
            FROM push.subscriptions WHERE app_id = \(appId) AND registration_token = \(token)
            """,
            logger: logger
        )
        for try await json in rows.decode(String.self) {
            let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] ?? [:]
            return object.compactMapValues { $0 as? String }
        }
        return nil
    }
}
