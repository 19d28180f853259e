import APNS
import Foundation
import Kafka
import Logging
import NIOPosix
import PostgresNIO
import PushRegistration
import PushRuntime
import PushStore
import ServiceLifecycle

/// Builds the apns-sender's parts; the executable and the tests call the same function.
public enum APNSSenderApplication {
    /// Defaults of `APNS_SENDER_*` (docs/configuration.md).
    public static let defaults = SenderSettings(group: "push-apns-sender", maxInFlight: 1000)

    /// The APNs client settings: `APNS_PRODUCTION_URL`, `APNS_SANDBOX_URL`, `APNS_CA_FILE`,
    /// `APNS_CONNECTIONS_PER_POOL`.
    package static func clientConfiguration(environment: EnvironmentSettings) throws -> APNSClientConfiguration {
        var configuration = APNSClientConfiguration()
        configuration.productionBaseURL = environment.string("APNS_PRODUCTION_URL", default: configuration.productionBaseURL)
        configuration.sandboxBaseURL = environment.string("APNS_SANDBOX_URL", default: configuration.sandboxBaseURL)
        configuration.connectionsPerPool = try environment.int("APNS_CONNECTIONS_PER_POOL", default: configuration.connectionsPerPool, in: 1...64)
        configuration.trustedCAPEM = try SenderRuntime.caFile(environment.string("APNS_CA_FILE", default: ""), setting: "APNS_CA_FILE")
        return configuration
    }

    public static func build(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) throws -> [any Service] {
        let settings = try SenderSettings(prefix: "APNS_SENDER", defaults: defaults, environment: environment)
        let assembly = try SenderAssembly(
            configuration: configuration, settings: settings, environment: environment, postgres: postgres, producer: producer, logger: logger, now: now
        )
        let client = APNSClient(
            configuration: try clientConfiguration(environment: environment),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger, now: now,
            tokenStore: PostgresAPNSProviderTokenStore(postgres: postgres, cipher: try SenderRuntime.cipher(environment), logger: logger)
        )
        let transport = APNSTransport(client: client, credentials: assembly.credentials, suspensions: assembly.suspensions, now: now)
        return assembly.services(
            transport: transport, messages: configuration.topics.apnsMessages, retries: configuration.topics.apnsRetries,
            shutdownClient: { try await client.shutdown() }
        )
    }
}
