import Hummingbird
import Kafka
import Logging
import PostgresNIO
import PushRuntime
import PushStore
import ServiceLifecycle

/// Builds the tracking-ingestion service's parts; the executable and the tests call the same
/// function.
package enum TrackingApplication {
    /// The parts, in start order (they stop in reverse: the HTTP endpoint first, then the
    /// `tracking_log` projection, then the tracking producer flushes).
    ///
    /// - Parameter deadLetterProducer: the runtime's shared producer, for records the projection
    ///   cannot read (`push.tracking.dlq`).
    package static func build(
        configuration: RuntimeConfiguration, settings: TrackingSettings, postgres: PostgresClient,
        deadLetterProducer: KafkaProducer, logger: Logger
    ) throws -> [any Service] {
        let producer = try makeProducer(configuration: configuration, settings: settings, logger: logger)
        let issued = IssuedDeliveries(postgres: postgres, logger: logger)
        let http = httpServer(producer: producer, issued: issued, configuration: configuration, settings: settings, logger: logger)
        let projection = ProjectionRunner(
            projection: TrackingLogProjection(name: settings.projectionName, topic: configuration.topics.tracking.name),
            postgres: postgres, consumer: configuration.consumer(group: ""),
            deadLetters: DeadLetterPublisher(producer: deadLetterProducer, catalog: configuration.topics, group: settings.projectionName),
            logger: logger
        )
        return [producer, projection, http]
    }

    /// The producer of tracking events. Its own, so that the delivery timeout is the store
    /// timeout: a hit the broker did not store in time is not stored later either (no event
    /// behind a 503).
    package static func makeProducer(configuration: RuntimeConfiguration, settings: TrackingSettings, logger: Logger) throws(KafkaError) -> KafkaProducer {
        var producerConfiguration = configuration.producer
        producerConfiguration.deliveryTimeoutMilliseconds = settings.storeTimeoutMilliseconds
        producerConfiguration.lingerMilliseconds = settings.lingerMilliseconds
        return try KafkaProducer(configuration: producerConfiguration, logger: logger)
    }

    /// The HTTP server answering `GET /r/`.
    package static func httpServer(
        producer: KafkaProducer, issued: IssuedDeliveries, configuration: RuntimeConfiguration, settings: TrackingSettings, logger: Logger
    ) -> some Service {
        let router = Router()
        TrackingEndpoints(producer: producer, topic: configuration.topics.tracking.name, issued: issued, logger: logger).addRoutes(to: router)
        return Application(
            router: router,
            server: configuration.httpServer,
            configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: nil),
            logger: logger
        )
    }
}
