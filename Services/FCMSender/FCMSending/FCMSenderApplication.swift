import FCM
import Foundation
import Kafka
import Logging
import NIOPosix
import PostgresNIO
import PushRegistration
import PushRuntime
import PushStore
import ServiceLifecycle

/// Builds the fcm-sender's parts; the executable and the tests call the same function.
public enum FCMSenderApplication {
    /// Defaults of `FCM_SENDER_*` (docs/configuration.md). 200 requests in flight: Google's
    /// front ends allow 100 concurrent streams per HTTP/2 connection, and the client opens 2.
    public static let defaults = SenderSettings(group: "push-fcm-sender", maxInFlight: 200)

    /// The FCM client settings: `FCM_BASE_URL`, `FCM_TOKEN_URL`, `FCM_CA_FILE`, `FCM_CONNECTIONS`.
    package static func clientConfiguration(environment: EnvironmentSettings) throws -> FCMClientConfiguration {
        var configuration = FCMClientConfiguration()
        configuration.baseURL = environment.string("FCM_BASE_URL", default: configuration.baseURL)
        let tokenURL = environment.string("FCM_TOKEN_URL", default: "")
        configuration.tokenURLOverride = tokenURL.isEmpty ? nil : tokenURL
        configuration.connections = try environment.int("FCM_CONNECTIONS", default: configuration.connections, in: 1...64)
        configuration.trustedCAPEM = try SenderRuntime.caFile(environment.string("FCM_CA_FILE", default: ""), setting: "FCM_CA_FILE")
        return configuration
    }

    public static func build(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) throws -> [any Service] {
        let settings = try SenderSettings(prefix: "FCM_SENDER", defaults: defaults, environment: environment)
        let assembly = try SenderAssembly(
            configuration: configuration, settings: settings, environment: environment, postgres: postgres, producer: producer, logger: logger, now: now
        )
        let client = FCMClient(
            configuration: try clientConfiguration(environment: environment),
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger, now: now
        )
        let transport = FCMTransport(client: client, credentials: assembly.credentials, suspensions: assembly.suspensions, now: now)
        return assembly.services(
            transport: transport, messages: configuration.topics.fcmMessages, retries: configuration.topics.fcmRetries,
            shutdownClient: { try await client.shutdown() }
        )
    }
}
