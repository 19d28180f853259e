import Hummingbird
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore
import ServiceLifecycle

/// Builds the delivery-planning service's parts; the executable and the tests call the same
/// function.
package enum PlanningApplication {
    /// Consumer groups (and `consumer_offsets` keys) of the parts that read topics.
    package struct GroupNames: Sendable {
        package var intake: String
        package var deliveries: String
        package var broadLog: String

        package init(
            intake: String = "push-delivery-planner", deliveries: String = "push-deliveries-projection", broadLog: String = "push-broad-log-projection"
        ) {
            self.intake = intake
            self.deliveries = deliveries
            self.broadLog = broadLog
        }

        /// `PLANNER_INTAKE_GROUP`, `PLANNER_DELIVERIES_GROUP`, `PLANNER_BROAD_LOG_GROUP`.
        package init(environment: EnvironmentSettings) {
            let defaults = GroupNames()
            self.init(
                intake: environment.string("PLANNER_INTAKE_GROUP", default: defaults.intake),
                deliveries: environment.string("PLANNER_DELIVERIES_GROUP", default: defaults.deliveries),
                broadLog: environment.string("PLANNER_BROAD_LOG_GROUP", default: defaults.broadLog)
            )
        }
    }

    /// The groups whose lag the planner exports by default (`PLANNER_WATCHED_GROUPS` unset):
    /// every consumer group of the channel under its default name, with the topics it reads,
    /// the planner's own under `groups`. A deployment that renames a group (`*_GROUP`) names the
    /// groups itself.
    package static func watchedGroups(topics: TopicCatalog, groups: GroupNames) -> [KafkaGroupLag.Group] {
        var watched: [KafkaGroupLag.Group] = [
            .init(name: groups.intake, topics: [topics.deliveryRequests.name]),
            .init(name: groups.deliveries, topics: [topics.deliveryEvents.name]),
            .init(name: groups.broadLog, topics: [topics.messageResults.name]),
            .init(name: "push-catalog-projection", topics: [topics.catalog.name]),
            .init(name: "push-subscriptions-projection", topics: [topics.subscriptions.name]),
            .init(name: "push-tracking-log-projection", topics: [topics.tracking.name]),
        ]
        for (provider, bulk, bulkRetries, transactional, transactionalRetries, throttled) in [
            ("apns", topics.apnsMessages, topics.apnsRetries, topics.apnsTransactionalMessages, topics.apnsTransactionalRetries, topics.apnsThrottled),
            ("fcm", topics.fcmMessages, topics.fcmRetries, topics.fcmTransactionalMessages, topics.fcmTransactionalRetries, topics.fcmThrottled),
        ] {
            let group = "push-\(provider)-sender"
            watched += [
                .init(name: group, topics: [bulk.name, bulkRetries.name]),
                .init(name: "\(group).transactional", topics: [transactional.name, transactionalRetries.name]),
                .init(name: "\(group).throttled", topics: [throttled.name]),
            ]
        }
        return watched
    }

    /// The parts in start order: request intake, outbox publisher, the fan-outs of both lanes, the projections of
    /// deliveries and the broad log, the log partitions' maintenance, and the deliveries' admin API (`adminToken` nil: it
    /// answers 503).
    package static func build(
        configuration: RuntimeConfiguration, settings: PlanningSettings, postgres: PostgresClient,
        producer: KafkaProducer, adminToken: AdminToken?, dataKeys: (any DataKeyWrapping)?, logger: Logger, groups: GroupNames = GroupNames()
    ) throws -> [any Service] {
        let topics = configuration.topics
        let consumer = configuration.consumer(group: "")
        func runner<P: Projection>(_ projection: P) -> ProjectionRunner<P> {
            ProjectionRunner(
                projection: projection, postgres: postgres, consumer: consumer,
                deadLetters: DeadLetterPublisher(producer: producer, catalog: topics, group: projection.name), logger: logger
            )
        }
        // The signals that replace polling: raised after a commit, awaited by the part that
        // reads what was committed (docs/planning.md, "Waiting for work").
        // One fan-out per lane, each woken by every accepting commit (a signal wakes one waiter).
        let bulkAccepted = Wakeup()
        let transactionalAccepted = Wakeup()
        let outboxWritten = Wakeup()
        let idleWait = Duration.milliseconds(settings.idleWaitMilliseconds)
        let router = Router()
        DeliveryAdminEndpoints(
            admin: DeliveryAdmin(
                postgres: postgres, producer: producer, topic: topics.deliveryRequests.name, eventsTopic: topics.deliveryEvents.name, logger: logger),
            token: adminToken, operators: OperatorDirectory(postgres: postgres, logger: logger),
            audit: AdminAudit(producer: producer, topic: topics.audit.name, logger: logger)
        ).addRoutes(to: router)
        if adminToken == nil {
            logger.warning("PUSH_ADMIN_TOKEN is not set: the deliveries' admin API answers 503")
        }
        let adminAPI = Application(
            router: router, server: configuration.httpServer,
            configuration: .init(address: .hostname(settings.adminHost, port: settings.adminPort), serverName: nil), logger: logger)
        let watched = settings.watchedGroups ?? watchedGroups(topics: topics, groups: groups)
        let groupLag: [any Service] =
            watched.isEmpty
            ? []
            : [
                try KafkaGroupLag(
                    client: configuration.kafka, groups: watched, interval: .milliseconds(settings.groupLagIntervalMilliseconds), logger: logger)
            ]
        return [
            runner(DeliveryRequestIntake(name: groups.intake, catalog: topics, wakeOnCommit: [bulkAccepted, transactionalAccepted, outboxWritten])),
            PlannerOutboxPublisher(postgres: postgres, producer: producer, catalog: topics, outboxWritten: outboxWritten, backstop: idleWait, logger: logger),
            // The transactional lane's fan-out runs beside the bulk one: a transactional request
            // is planned at once, whatever bulk delivery is being fanned out (docs/planning.md).
            DeliveryFanOut(
                postgres: postgres, producer: producer, reader: KafkaLogReader(configuration: configuration.kafka, logger: logger),
                catalog: topics, settings: settings, dataKeys: dataKeys, lane: .transactional, deliveriesAccepted: transactionalAccepted,
                outboxWritten: outboxWritten,
                logger: logger
            ),
            DeliveryFanOut(
                postgres: postgres, producer: producer, reader: KafkaLogReader(configuration: configuration.kafka, logger: logger),
                catalog: topics, settings: settings, dataKeys: dataKeys, lane: .bulk, deliveriesAccepted: bulkAccepted, outboxWritten: outboxWritten,
                logger: logger
            ),
            runner(DeliveryProjection(name: groups.deliveries, topic: topics.deliveryEvents.name)),
            runner(BroadLogProjection(name: groups.broadLog, catalog: topics)),
            LogPartitionMaintenance(postgres: postgres, retentionDays: configuration.logRetentionDays, logger: logger),
            adminAPI,
        ] + groupLag
    }
}
