import APNS
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

/// Builds the apns-sender's parts; the executable and the tests call the same function.
package enum APNSSenderApplication {
    /// Defaults of `APNS_SENDER_*` (docs/configuration.md).
    package static let defaults = SenderSettings(group: "push-apns-sender", maxInFlight: 1000)

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

    package static func build(
        configuration: RuntimeConfiguration, environment: EnvironmentSettings, postgres: PostgresClient,
        producer: KafkaProducer, logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) throws -> [any Service] {
        let settings = try SenderSettings(prefix: "APNS_SENDER", defaults: defaults, environment: environment)
        let assembly = try SenderAssembly(
            configuration: configuration, settings: settings, environment: environment, postgres: postgres, producer: producer, logger: logger, now: now
        )
        // A client per lane: the transactional lane has its own connections (one per pool;
        // APNS_CONNECTIONS_PER_POOL is the bulk lane's), so its sends never wait for a stream
        // behind bulk ones. Both share the provider tokens through PostgreSQL.
        let tokenStore = PostgresAPNSProviderTokenStore(postgres: postgres, cipher: try SenderRuntime.cipher(environment), logger: logger)
        func lane(messages: TopicDefinition, retries: TopicDefinition, connections: Int?) throws -> SenderAssembly.Lane<APNSTransport> {
            var clientConfiguration = try clientConfiguration(environment: environment)
            if let connections { clientConfiguration.connectionsPerPool = connections }
            let client = APNSClient(
                configuration: clientConfiguration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: logger, now: now, tokenStore: tokenStore)
            return SenderAssembly.Lane(
                transport: APNSTransport(client: client, credentials: assembly.credentials, suspensions: assembly.suspensions, now: now),
                messages: messages, retries: retries, shutdownClient: { try await client.shutdown() })
        }
        let topics = configuration.topics
        return assembly.services(
            bulk: try lane(messages: topics.apnsMessages, retries: topics.apnsRetries, connections: nil),
            transactional: try lane(messages: topics.apnsTransactionalMessages, retries: topics.apnsTransactionalRetries, connections: 1),
            throttled: topics.apnsThrottled
        )
    }
}
