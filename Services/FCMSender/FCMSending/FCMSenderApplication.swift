import FCM
import Foundation
import Kafka
import Logging
import NIOPosix
import PostgresNIO
import PushCredentials
import PushEvents
import PushRuntime
import PushStore
import ServiceLifecycle

/// Builds the fcm-sender's parts; the executable and the tests call the same function.
package enum FCMSenderApplication {
    /// Defaults of `FCM_SENDER_*` (docs/configuration.md). 200 requests in flight: Google's
    /// front ends allow 100 concurrent streams per HTTP/2 connection, and the client opens 2.
    package static let defaults = SenderSettings(group: "push-fcm-sender", maxInFlight: 200)

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

    package static func build(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) throws -> [any Service] {
        let settings = try SenderSettings(prefix: "FCM_SENDER", defaults: defaults, environment: environment)
        let assembly = try SenderAssembly(
            configuration: configuration, settings: settings, environment: environment, postgres: postgres, producer: producer, logger: logger, now: now
        )
        // A client per lane: the transactional lane has its own connection (FCM_CONNECTIONS
        // are the bulk lane's), so its sends never wait for a stream behind bulk ones.
        func lane(messages: TopicDefinition, retries: TopicDefinition, connections: Int?) throws -> SenderAssembly.Lane<FCMTransport> {
            var clientConfiguration = try clientConfiguration(environment: environment)
            if let connections { clientConfiguration.connections = connections }
            let client = FCMClient(configuration: clientConfiguration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger, now: now)
            return SenderAssembly.Lane(
                transport: FCMTransport(client: client, credentials: assembly.credentials, suspensions: assembly.suspensions, now: now),
                messages: messages, retries: retries, shutdownClient: { try await client.shutdown() })
        }
        let topics = configuration.topics
        return assembly.services(
            bulk: try lane(messages: topics.fcmMessages, retries: topics.fcmRetries, connections: nil),
            transactional: try lane(messages: topics.fcmTransactionalMessages, retries: topics.fcmTransactionalRetries, connections: 1),
            throttled: topics.fcmThrottled
        )
    }
}
