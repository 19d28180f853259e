import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore
import PushTestSupport
import Synchronization
import Testing

/// Malformed and hostile records on every topic a PostgreSQL projection consumes (catalog,
/// subscriptions, delivery events, message results, tracking), read by the services' own
/// projections (`pushctl projections replay`, the same runners the services start) into an
/// empty database: each bad record lands in its topic's dead-letter topic with a reason, a
/// record of an unknown version is skipped, and the good record behind them is projected.
@Suite("Hostile records on every projected topic: dead-lettered with a reason, the projection goes on", .serialized)
struct HostileRecordTests {
    /// The bad records every topic gets, with what the dead letter's reason must mention.
    static func hostile(knownType: String) -> [(name: String, value: [UInt8])] {
        let envelopeStart =
            #"{"id":"\#(UUID().uuidString.lowercased())","occurredAt":"2026-11-23T10:00:00.000Z","key":"k","correlationId":null,"causationId":null,"#
        return [
            ("not JSON", Array("this is not an event".utf8)),
            ("JSON, not an envelope", Array(#"{"hello":"world"}"#.utf8)),
            ("envelope with a number as type", Array((envelopeStart + #""type":5,"version":1,"data":{}}"#).utf8)),
            ("known type, data of the wrong shape", Array((envelopeStart + #""type":"\#(knownType)","version":1,"data":{"unexpected":12}}"#).utf8)),
            ("600 KB of garbage", Array((#"{"junk":""# + String(repeating: "x", count: 600_000) + #""}"#).utf8)),
            ("empty value", []),
            ("invalid UTF-8", [0x7B, 0xFF, 0xFE, 0x7D]),
        ]
    }

    static func withPostgres(_ settings: PostgresSettings, _ logger: Logger, _ body: @escaping @Sendable (PostgresClient) async throws -> Void) async throws {
        let client = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await client.run() }
            defer { tasks.cancelAll() }
            try await body(client)
        }
    }

    @Test("seven bad records per topic go to <topic>.dlq with a reason; unknown versions are skipped; the good records are projected")
    func everyProjectedTopic() async throws {
        let suffix = PlanningHarness.makeSuffix()
        var environment = ProcessInfo.processInfo.environment
        _ = try #require(environment["KAFKA_BROKERS"], "KAFKA_BROKERS is not set: run the suite with scripts/test")
        for (id, name) in [
            ("CATALOG", "catalog"), ("SUBSCRIPTIONS", "subscriptions"), ("DELIVERY_EVENTS", "delivery-events"),
            ("APNS_MESSAGES", "apns"), ("FCM_MESSAGES", "fcm"), ("MESSAGE_RESULTS", "results"), ("TRACKING", "tracking"),
            // The broad log also reads the transactional lane's topics (empty here).
            ("APNS_TRANSACTIONAL_MESSAGES", "apns-tx"), ("FCM_TRANSACTIONAL_MESSAGES", "fcm-tx"),
        ] {
            environment["PUSH_TOPIC_\(id)"] = "test.hostile.\(name).\(suffix)"
            environment["PUSH_TOPIC_\(id)_PARTITIONS"] = "1"
        }
        let configuration = try RuntimeConfiguration(service: "hostile-tests", defaultOpsPort: 0, environment: EnvironmentSettings(environment))
        let logger = {
            var logger = Logger(label: "hostile-tests")
            logger.logLevel = .error
            return logger
        }()
        let topics = configuration.topics
        let admin = try KafkaAdmin(configuration: configuration.kafka, logger: logger)
        let created = [
            topics.catalog, topics.subscriptions, topics.deliveryEvents, topics.apnsMessages, topics.fcmMessages, topics.messageResults, topics.tracking,
            topics.apnsTransactionalMessages, topics.fcmTransactionalMessages,
        ]
        _ = try await admin.createTopics(
            created.flatMap { [KafkaTopicSpecification(name: $0.name, partitions: 1), KafkaTopicSpecification(name: "\($0.name).dlq", partitions: 1)] })
        await admin.close()

        // One good event per topic, after the bad ones and an unknown version of it.
        let at = Date()
        let serviceName = "hostile-\(suffix)"
        let token = "hostile-token-\(suffix)"
        let requestId = "hostile-request-\(suffix)"
        let message = MessageReference(
            messageId: UUID(), broadLogId: nil, deliveryId: "hostile-\(suffix)", appId: UUID(), tokenDigest: TokenDigest.of(token), platform: .android)
        let tracking = TrackingHitRecorded(
            trackingId: UUID(), messageId: message.messageId.uuidString.lowercased(), messageIdForm: "uuid", deliveryId: message.deliveryId,
            tagId: 2, kind: "opened", occurredAt: at
        )
        let service = ServiceDefined(serviceId: UUID(), name: serviceName, label: "Hostile")
        let good: [(topic: String, type: String, key: String, record: KafkaProducerRecord)] = [
            (
                topics.catalog.name, ServiceDefined.eventType, "service:\(service.serviceId)",
                try KafkaProducerRecord(topic: topics.catalog.name, event: EventEnvelope(key: "service:\(service.serviceId)", payload: service))
            ),
            (
                topics.subscriptions.name, SubscriptionRegistered.eventType, SubscriptionRegistered.key(appId: message.appId, registrationToken: token),
                try KafkaProducerRecord(
                    topic: topics.subscriptions.name,
                    event: EventEnvelope(
                        key: SubscriptionRegistered.key(appId: message.appId, registrationToken: token),
                        payload: SubscriptionRegistered(
                            appId: message.appId, integrationKey: "key-\(suffix)", platform: .android, registrationToken: token, userKey: "u",
                            deviceImei: nil, deviceName: "d", deviceModel: "m", deviceBrand: "b", deviceManufacturer: "f", osName: "android",
                            osVersion: "Android 14", osLanguage: "en", params: [:], registeredAt: at
                        )
                    ))
            ),
            (
                topics.deliveryEvents.name, DeliveryRejected.eventType, requestId,
                try KafkaProducerRecord(
                    topic: topics.deliveryEvents.name,
                    event: EventEnvelope(
                        key: requestId,
                        payload: DeliveryRejected(requestId: requestId, reason: "test", sourceTopic: "x", sourcePartition: 0, sourceOffset: 0, rejectedAt: at)
                    ))
            ),
            (
                topics.messageResults.name, MessageSent.eventType, message.messageId.uuidString.lowercased(),
                try KafkaProducerRecord(
                    topic: topics.messageResults.name,
                    event: EventEnvelope(
                        key: message.messageId.uuidString.lowercased(), payload: MessageSent(message: message, providerMessageId: "p", attempts: 1, sentAt: at)
                    ))
            ),
            (
                topics.tracking.name, TrackingHitRecorded.eventType, tracking.messageId,
                try KafkaProducerRecord(
                    topic: topics.tracking.name, event: EventEnvelope(key: tracking.messageId, payload: tracking, id: tracking.trackingId, occurredAt: at))
            ),
        ]
        var records: [KafkaProducerRecord] = []
        for entry in good {
            for bad in Self.hostile(knownType: entry.type) {
                records.append(KafkaProducerRecord(topic: entry.topic, key: Array(bad.name.utf8), value: bad.value))
            }
            // The good event with an unknown version: skipped, not a dead letter.
            let future = String(decoding: entry.record.value, as: UTF8.self).replacingOccurrences(
                of: #""version":[0-9]+"#, with: #""version":99"#, options: .regularExpression)
            #expect(future.contains(#""version":99"#))
            records.append(KafkaProducerRecord(topic: entry.topic, key: Array("unknown version".utf8), value: Array(future.utf8)))
            records.append(entry.record)
        }
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        let reports = await producer.send(records)
        await producer.close()
        for report in reports { _ = try report.get() }

        // The services' projections, from the beginning, into an empty database.
        let database = "push_test_hostile_\(suffix)"
        try await Self.withPostgres(configuration.postgres, logger) {
            try await $0.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: logger)
        }
        defer { ProjectionReplayTests.dropLater(database) }
        environment["POSTGRES_URL"] = try ProjectionReplayTests.url(environment["POSTGRES_URL"], database: database)
        let migrate = try await BuiltExecutable.run("pushctl", arguments: ["migrate"], environment: environment)
        try #require(migrate.status == 0, "\(migrate.output)")
        let replay = try await BuiltExecutable.run(
            "pushctl",
            arguments: [
                "projections", "replay", "--only", "catalog", "--only", "subscriptions", "--only", "deliveries", "--only", "broad-log", "--only",
                "tracking-log",
                "--quiet-ms", "1500", "--timeout", "120",
            ],
            environment: environment
        )
        let output = replay.output
        #expect(replay.status == 0, "\(output)")

        var settings = configuration.postgres
        settings.database = database
        try await Self.withPostgres(settings, logger) { client in
            func count(_ query: PostgresQuery) async throws -> Int {
                for try await value in try await client.query(query, logger: logger).decode(Int.self) { return value }
                return -1
            }
            let rows = [
                try await count("SELECT count(*)::int FROM push.services WHERE name = \(serviceName)"),
                try await count("SELECT count(*)::int FROM push.subscriptions WHERE registration_token = \(token)"),
                try await count("SELECT count(*)::int FROM push.delivery_rejections WHERE request_id = \(requestId)"),
                try await count("SELECT count(*)::int FROM push.broad_log WHERE message_id = \(message.messageId) AND status = 'sent'"),
                try await count("SELECT count(*)::int FROM push.tracking_log WHERE tracking_id = \(tracking.trackingId)"),
            ]
            #expect(rows == [1, 1, 1, 1, 1], "services, subscriptions, delivery_rejections, broad_log, tracking_log: the good record of each topic")
        }

        let reader = KafkaLogReader(configuration: configuration.kafka, logger: logger)
        for entry in good {
            let letters = Mutex<[KafkaConsumerRecord]>([])
            try await reader.read(topic: "\(entry.topic).dlq") { batch in letters.withLock { $0 += batch } }
            let all = letters.withLock { $0 }
            let names = all.map { String(decoding: $0.key ?? [], as: UTF8.self) }
            #expect(names == Self.hostile(knownType: entry.type).map(\.name), "\(entry.topic).dlq holds the seven bad records in order")
            for letter in all {
                let reason = letter.headers.string("dlq.reason") ?? ""
                #expect(!reason.isEmpty && letter.headers.string("dlq.source.topic") == entry.topic, "\(entry.topic): \(reason)")
            }
        }
    }
}
