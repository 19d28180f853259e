import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushRuntime
import PushStore
import ServiceLifecycle

/// Settings both senders read the same way.
enum SenderRuntime {
    /// The credential cipher: the senders cannot work without `PUSH_CREDENTIALS_KEY`.
    static func cipher(_ environment: EnvironmentSettings) throws -> CredentialCipher {
        guard let cipher = try CredentialCipher.fromEnvironment(environment.values) else {
            throw ConfigurationError(
                "PUSH_CREDENTIALS_KEY (or PUSH_CREDENTIALS_KEY_FILE) is required: the sender decrypts the apps' provider credentials with it")
        }
        return cipher
    }

    /// The PEM text of a CA file setting, nil when the setting is empty (system roots).
    static func caFile(_ path: String, setting: String) throws -> String? {
        guard !path.isEmpty else { return nil }
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8),
            text.contains("-----BEGIN CERTIFICATE-----")
        else {
            throw ConfigurationError("\(setting) must name a readable PEM certificate file, got \"\(path)\"")
        }
        return text
    }
}

/// What both senders are made of around their transport: the credential cache and suspensions
/// the transport needs, then the `MessageSender` on the provider's topics and the client's shutdown.
struct SenderAssembly: Sendable {
    let configuration: RuntimeConfiguration
    let settings: SenderSettings
    let postgres: PostgresClient
    let producer: KafkaProducer
    let logger: Logger
    let now: @Sendable () -> Date
    let credentials: AppCredentialCache
    let suspensions = CredentialSuspensions()
    /// The data keys' key-encryption key ring (`PUSH_DATA_KEYS_KEY`), to open sealed records.
    let dataKeys: (any DataKeyWrapping)?

    init(
        configuration: RuntimeConfiguration, settings: SenderSettings, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date
    ) throws {
        self.configuration = configuration
        self.settings = settings
        self.postgres = postgres
        self.producer = producer
        self.logger = logger
        self.now = now
        let store = CredentialStore(postgres: postgres, cipher: try SenderRuntime.cipher(environment), logger: logger)
        credentials = AppCredentialCache(store: store, lifetime: .milliseconds(settings.credentialCacheMilliseconds))
        dataKeys = try CredentialCipher.dataKeys(fromEnvironment: environment.values)
    }

    /// One lane of a sender: its transport (a provider client of its own, so that the lanes
    /// never wait for each other's connections or streams), its topics and its client's shutdown.
    struct Lane<T: MessageTransport>: Sendable {
        var transport: T
        var messages: TopicDefinition
        var retries: TopicDefinition
        var shutdownClient: @Sendable () async throws -> Void
    }

    /// The services in start order: the delivery controls, the clients' shutdowns, then the
    /// lanes: a `MessageSender` per lane (transactional first) and one on the `throttled` topic
    /// (over the bulk lane's client), run together as one service so that a SIGTERM stops them
    /// at once rather than one after the other. Each client is shut down after the senders
    /// stopped (reverse order), so their last sends still have connections.
    func services<T: MessageTransport>(bulk: Lane<T>, transactional: Lane<T>, throttled: TopicDefinition) -> [any Service] {
        let topics = configuration.topics
        let controls = DeliveryControls(postgres: postgres, refresh: .milliseconds(settings.controlsRefreshMilliseconds), logger: logger)
        // One per process: both lanes take their slots from the same batches.
        let throttle = ThrottleSlots(postgres: postgres, provider: bulk.transport.provider, logger: logger, now: now)
        var settings = settings
        settings.answersOnStopMilliseconds = configuration.shutdownGraceMilliseconds / 2
        func sender(_ lane: Lane<T>, settings: SenderSettings, reading: TopicDefinition? = nil) -> MessageSender<T> {
            MessageSender(
                transport: lane.transport, settings: settings,
                topics: .init(
                    messages: (reading ?? lane.messages).name, retries: lane.retries.name, throttled: throttled.name, results: topics.messageResults.name,
                    subscriptions: topics.subscriptions.name),
                producer: producer, deadLetters: DeadLetterPublisher(producer: producer, catalog: topics, group: settings.group),
                suspensions: suspensions, controls: controls, throttle: throttle, keys: MessageKeys(postgres: postgres, wrapping: dataKeys, logger: logger),
                consumer: configuration.consumer(group: settings.group), logger: logger,
                now: now
            )
        }
        return [
            controls, ShutdownAction(bulk.shutdownClient), ShutdownAction(transactional.shutdownClient),
            SenderLanes([
                sender(transactional, settings: settings.transactionalLane), sender(bulk, settings: settings),
                // Both lanes' throttled messages, sent over the bulk lane's connections; its retries
                // and paused messages go to the bulk lane's retry topic (a record does not name its lane).
                sender(bulk, settings: settings.throttledLane, reading: throttled),
            ]),
        ]
    }
}

/// The lanes' senders as one service: they run side by side and, on a graceful shutdown, stop
/// side by side (each waits for its answers, publishes and leaves its groups), so a stop takes
/// as long as the slowest lane, not the sum of the three. One failing stops the others.
struct SenderLanes: Service {
    let lanes: [any Service]

    init(_ lanes: [any Service]) {
        self.lanes = lanes
    }

    func run() async throws {
        try await withThrowingDiscardingTaskGroup { group in
            for lane in lanes {
                group.addTask { try await lane.run() }
            }
        }
    }
}

/// Runs `action` when the service group stops this service (after the services listed after it).
struct ShutdownAction: Service {
    let action: @Sendable () async throws -> Void

    init(_ action: @escaping @Sendable () async throws -> Void) {
        self.action = action
    }

    func run() async throws {
        try? await gracefulShutdown()
        try await action()
    }
}
