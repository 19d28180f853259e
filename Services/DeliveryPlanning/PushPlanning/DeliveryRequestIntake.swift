import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// Reads `push.delivery-requests` exactly once (a `Projection`: its position commits with the
/// plans it creates). A valid request becomes a row of `push.delivery_plans` (the whole
/// delivery, its recipients included) and a `DeliveryAccepted` (version 2: the recipients
/// counted, `recipientsCounted`); an invalid one a `DeliveryRejected` plus the raw record on
/// `push.delivery-requests.dlq`; a requestId seen before changes nothing.
package struct DeliveryRequestIntake: Projection {
    package enum Event: Sendable {
        case request(DeliveryRequest, KafkaConsumerRecord)
        case unreadable(DeliveryRejection, KafkaConsumerRecord)
    }

    package let name: String
    package let topics: [String]
    let catalog: TopicCatalog
    let clock: @Sendable () -> Date
    /// Raised after each commit: an applied request wrote a plan and outbox rows (a duplicate
    /// writes nothing, and only costs the waiters one look).
    let committed: [Wakeup]
    private let accepted = Counter(label: "push_planner_requests_total", dimensions: [("outcome", "accepted")])
    private let rejected = Counter(label: "push_planner_requests_total", dimensions: [("outcome", "rejected")])
    private let duplicates = Counter(label: "push_planner_requests_total", dimensions: [("outcome", "duplicate")])

    /// `wakeOnCommit`: the parts that read what the intake writes (the fan-out reads the plans,
    /// the outbox publisher the outbox), woken once a batch committed.
    package init(name: String = "push-delivery-planner", catalog: TopicCatalog, wakeOnCommit: [Wakeup] = [], clock: @escaping @Sendable () -> Date = Date.init)
    {
        self.name = name
        self.topics = [catalog.deliveryRequests.name]
        self.catalog = catalog
        self.committed = wakeOnCommit
        self.clock = clock
    }

    package func didCommit() {
        for wakeup in committed { wakeup.signal() }
    }

    package func decode(_ record: KafkaConsumerRecord) throws -> Event? {
        do {
            return .request(try DeliveryRequestValidator.parse(record.value), record)
        } catch {
            return .unreadable(error, record)
        }
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        var services: [String: PlanningService?] = [:]
        var outbox: [KafkaProducerRecord] = []
        for projected in events {
            switch projected.event {
            case .unreadable(let rejection, let record):
                outbox += try rejectionRecords(rejection, record: record)
            case .request(let request, let record):
                if let known = try await DeliveryIds.existing(requestId: request.requestId, on: connection, logger: logger) {
                    duplicates.increment()
                    logger.notice(
                        "Delivery request already seen; ignored",
                        metadata: ["request.id": "\(request.requestId)", "delivery.id": "\(known)", "kafka.offset": "\(record.offset)"])
                    continue
                }
                if services[request.service] == nil {
                    services[request.service] = .some(try await ServiceCatalog.service(named: request.service, on: connection, logger: logger))
                }
                let delivery: DeliveryAccepted
                do {
                    let service = services[request.service]!
                    let segmented = try await DeliverySegments.resolve(request, service: service, on: connection, logger: logger)
                    let (resolved, template) = try await DeliveryTemplates.resolve(segmented, service: service, on: connection, logger: logger)
                    let deliveryId = try await DeliveryIds.next(requestId: request.requestId, on: connection, logger: logger)
                    var accepted = try DeliveryRequestValidator.validate(resolved, service: service, now: clock(), deliveryId: deliveryId)
                    accepted.template = template
                    delivery = accepted
                } catch let error as DeliveryRejection {
                    outbox += try rejectionRecords(error, record: record)
                    continue
                }
                let acceptedJSON = String(decoding: try EventJSON.encoder.encode(delivery), as: UTF8.self)
                let inserted = try await connection.query(
                    """
                    INSERT INTO push.delivery_plans (delivery_id, request_id, accepted, status, send_at)
                    VALUES (\(delivery.deliveryId), \(delivery.requestId), \(acceptedJSON)::jsonb, 'accepted', \(delivery.sendAt))
                    ON CONFLICT DO NOTHING
                    RETURNING delivery_id
                    """,
                    logger: logger
                )
                var isNew = false
                for try await _ in inserted { isNew = true }
                if isNew {
                    accepted.increment()
                    logger.info(
                        "Delivery accepted",
                        metadata: ["delivery.id": "\(delivery.deliveryId)", "request.id": "\(delivery.requestId)", "send.at": "\(delivery.sendAt)"])
                    outbox.append(
                        try PlannerOutbox.record(
                            topic: catalog.deliveryEvents.name, key: delivery.deliveryId, payload: delivery.recipientsCounted,
                            correlationId: delivery.requestId))
                } else {
                    duplicates.increment()
                    logger.notice(
                        "Delivery request already seen; ignored", metadata: ["request.id": "\(request.requestId)", "kafka.offset": "\(record.offset)"])
                }
            }
        }
        try await PlannerOutbox.insert(outbox, on: connection, logger: logger)
    }

    /// `DeliveryRejected` and the dead letter, both through the outbox.
    private func rejectionRecords(_ rejection: DeliveryRejection, record: KafkaConsumerRecord) throws -> [KafkaProducerRecord] {
        rejected.increment()
        let now = clock()
        let event = DeliveryRejected(
            requestId: rejection.requestId, reason: rejection.reason, sourceTopic: record.topic, sourcePartition: record.partition, sourceOffset: record.offset,
            rejectedAt: now)
        let key = rejection.requestId ?? "unreadable:\(record.partition):\(record.offset)"
        let letter = KafkaProducerRecord(
            topic: catalog.deliveryRequestsDLQ.name, key: record.key, value: record.value,
            headers: record.headers + [
                KafkaHeader(name: "dlq.source.topic", string: record.topic),
                KafkaHeader(name: "dlq.source.partition", string: String(record.partition)),
                KafkaHeader(name: "dlq.source.offset", string: String(record.offset)),
                KafkaHeader(name: "dlq.consumer.group", string: name),
                KafkaHeader(name: "dlq.reason", string: rejection.reason),
                KafkaHeader(name: "dlq.failed.at", string: now.formatted(.iso8601)),
            ]
        )
        return [try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: key, payload: event, correlationId: rejection.requestId), letter]
    }
}
