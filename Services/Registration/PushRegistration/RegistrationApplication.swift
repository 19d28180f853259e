import Hummingbird
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushRuntime
import PushStore
import ServiceLifecycle

/// Builds the registration service's parts; the executable and the tests call the same function.
package enum RegistrationApplication {
    /// Names of the projections this service runs (consumer groups and `consumer_offsets` keys).
    package struct ProjectionNames: Sendable {
        package var catalog: String
        package var subscriptions: String
        package var audit: String

        package init(
            catalog: String = "push-catalog-projection", subscriptions: String = "push-subscriptions-projection", audit: String = "push-audit-projection"
        ) {
            self.catalog = catalog
            self.subscriptions = subscriptions
            self.audit = audit
        }

        /// `REGISTRATION_CATALOG_GROUP`, `REGISTRATION_SUBSCRIPTIONS_GROUP` and
        /// `REGISTRATION_AUDIT_GROUP` override the defaults (a new name rebuilds that projection
        /// from the beginning of its topic).
        package init(environment: EnvironmentSettings) {
            self.init(
                catalog: environment.string("REGISTRATION_CATALOG_GROUP", default: "push-catalog-projection"),
                subscriptions: environment.string("REGISTRATION_SUBSCRIPTIONS_GROUP", default: "push-subscriptions-projection"),
                audit: environment.string("REGISTRATION_AUDIT_GROUP", default: "push-audit-projection")
            )
        }
    }

    /// The parts, in start order (they stop in reverse: the HTTP endpoints first, then the
    /// projections, then the registration producer flushes).
    package static func build(
        configuration: RuntimeConfiguration, settings: RegistrationSettings, postgres: PostgresClient,
        deadLetterProducer: KafkaProducer, adminToken: AdminToken?, credentialCipher: CredentialCipher?, dataKeys: (any DataKeyWrapping)?,
        logger: Logger, projections: ProjectionNames = ProjectionNames()
    ) throws -> [any Service] {
        // Its own producer, so that the delivery timeout is the registration's store timeout:
        // a registration the broker did not store in time is not stored later either.
        var producerConfiguration = configuration.producer
        producerConfiguration.deliveryTimeoutMilliseconds = settings.storeTimeoutMilliseconds
        let producer = try KafkaProducer(configuration: producerConfiguration, logger: logger)

        let directory = AppDirectory(postgres: postgres, logger: logger)
        let router = Router(context: RegistrationRequestContext.self)
        RegistrationEndpoints(
            producer: producer, topic: configuration.topics.subscriptions.name, directory: directory,
            keys: PersonalDataKeys(
                postgres: postgres, wrapping: dataKeys, logger: logger, statementDeadline: .milliseconds(settings.storeTimeoutMilliseconds)),
            settings: settings, logger: logger
        )
        .addRoutes(to: router)
        let credentials = credentialCipher.map { CredentialStore(postgres: postgres, cipher: $0, logger: logger) }
        let admin = CatalogAdmin(
            producer: producer, topic: configuration.topics.catalog.name, postgres: postgres, directory: directory,
            credentials: credentials, logger: logger
        )
        let devices = DeviceAdmin(producer: producer, topic: configuration.topics.subscriptions.name, postgres: postgres, logger: logger)
        let erasure = PersonErasure(producer: producer, topic: configuration.topics.subscriptions.name, postgres: postgres, logger: logger)
        // The admin API on a port of its own when one is set, so that the SDKs' public port
        // cannot reach it whatever the proxy in front routes (docs/deploy.md).
        let adminRouter = settings.adminPort == nil ? router : Router(context: RegistrationRequestContext.self)
        let operatorDirectory = OperatorDirectory(postgres: postgres, logger: logger)
        AdminEndpoints(
            admin: admin, devices: devices, erasure: erasure,
            operators: OperatorAdmin(
                catalog: admin, directory: operatorDirectory, bcryptCost: settings.bcryptCost,
                signInLimiter: SignInLimiter(maxFailures: settings.signInMaxFailures, window: .seconds(settings.signInLockoutSeconds))),
            api: AdminAPI(
                token: adminToken, operators: operatorDirectory, audit: AdminAudit(producer: producer, topic: configuration.topics.audit.name, logger: logger))
        ).addRoutes(to: adminRouter)
        if adminToken == nil {
            logger.warning("PUSH_ADMIN_TOKEN is not set: the admin API answers 503")
        }
        var servers: [any Service] = [
            Application(
                router: router,
                server: configuration.httpServer,
                configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: nil),
                logger: logger
            )
        ]
        if let adminPort = settings.adminPort {
            servers.append(
                Application(
                    router: adminRouter,
                    server: configuration.httpServer,
                    configuration: .init(address: .hostname(settings.adminHost ?? settings.host, port: adminPort), serverName: nil),
                    logger: logger
                ))
        }

        let consumer = configuration.consumer(group: "")
        let catalog = ProjectionRunner(
            projection: CatalogProjection(name: projections.catalog, topic: configuration.topics.catalog.name),
            postgres: postgres, consumer: consumer,
            deadLetters: DeadLetterPublisher(producer: deadLetterProducer, catalog: configuration.topics, group: projections.catalog),
            logger: logger
        )
        let subscriptions = ProjectionRunner(
            projection: SubscriptionProjection(
                name: projections.subscriptions, topic: configuration.topics.subscriptions.name, catalogTopic: configuration.topics.catalog.name,
                wrapping: dataKeys),
            postgres: postgres, consumer: consumer,
            deadLetters: DeadLetterPublisher(producer: deadLetterProducer, catalog: configuration.topics, group: projections.subscriptions),
            logger: logger
        )
        let audit = ProjectionRunner(
            projection: AuditLogProjection(name: projections.audit, topic: configuration.topics.audit.name),
            postgres: postgres, consumer: consumer,
            deadLetters: DeadLetterPublisher(producer: deadLetterProducer, catalog: configuration.topics, group: projections.audit),
            logger: logger
        )
        let purger = SubscriptionPurger(
            postgres: postgres, producer: producer, topic: configuration.topics.subscriptions.name,
            purgeAfter: settings.purgeAfter, interval: settings.purgeInterval, logger: logger
        )
        return [producer, catalog, subscriptions, audit, purger] + servers
    }
}
