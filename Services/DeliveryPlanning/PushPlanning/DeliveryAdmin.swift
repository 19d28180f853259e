import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime

/// What the delivery-planning service's admin API does (docs/admin-api.md, "Deliveries"):
/// submit a version-1 request over HTTP, preview one, and read deliveries back.
///
/// A submitted request takes the same road as one an upstream system publishes: it is checked
/// here with the intake's rules (so a mistake is a 400 naming every problem instead of a later
/// `DeliveryRejected`), then published unchanged on `push.delivery-requests`, where the intake
/// reads it. The delivery id is reserved here (`push.delivery_id_reservations`) so that the
/// answer can name it; the intake gives the request that id.
package struct DeliveryAdmin: Sendable {
    let postgres: PostgresClient
    let producer: KafkaProducer
    /// `push.delivery-requests`, where a submitted request goes.
    let topic: String
    /// `push.delivery-events`, where cancel, pause and resume go.
    let eventsTopic: String
    let logger: Logger
    let clock: @Sendable () -> Date

    package init(
        postgres: PostgresClient, producer: KafkaProducer, topic: String, eventsTopic: String, logger: Logger,
        clock: @escaping @Sendable () -> Date = Date.init
    ) {
        self.postgres = postgres
        self.producer = producer
        self.topic = topic
        self.eventsTopic = eventsTopic
        self.logger = logger
        self.clock = clock
    }

    /// The answer to a submission (202).
    package struct Submission: Codable, Sendable, Equatable {
        package var requestId: String
        package var deliveryId: String
        /// `submitted` (published; the intake has not accepted it yet), or the delivery's
        /// status when the requestId was accepted before (`accepted`, `planning`, `planned`).
        package var status: String
        /// True when this requestId was submitted or accepted before: still one delivery.
        package var alreadySubmitted: Bool
    }

    /// Validates `document`, reserves its delivery id and publishes it on
    /// `push.delivery-requests`. A requestId accepted before is answered with its delivery and
    /// not published again; one only submitted before is published again (the intake keeps one).
    package func submit(_ document: [UInt8]) async throws -> Submission {
        let request = try Self.parse(document)
        let reserved = try await postgres.withConnection { connection -> Submission in
            if let known = try await acceptedDelivery(requestId: request.requestId, on: connection) { return known }
            try await validate(request, on: connection)
            return try await reserve(requestId: request.requestId, on: connection)
        }
        if reserved.status != "submitted" { return reserved }
        do {
            _ = try await producer.send(
                KafkaProducerRecord(
                    topic: topic, key: request.requestId, value: document,
                    headers: [KafkaHeader(name: "push-submitted-via", string: "admin-api")]))
        } catch {
            logger.error("Delivery request not stored by the broker", metadata: ["request.id": "\(request.requestId)", "error": "\(error)"])
            throw AdminError(status: 503, reason: "the broker did not store the request (\(error)); submit it again, it stays one delivery")
        }
        logger.info("Delivery request submitted", metadata: ["request.id": "\(request.requestId)", "delivery.id": "\(reserved.deliveryId)"])
        return reserved
    }

    /// Reads the envelope; a document that is not a version-1 request is a 400.
    static func parse(_ document: [UInt8]) throws -> DeliveryRequest {
        do {
            return try DeliveryRequestValidator.parse(document)
        } catch {
            throw AdminError(status: 400, reason: error.reason, problems: [error.reason])
        }
    }

    /// The intake's rules against the catalog as it is now; a 400 naming every problem.
    @discardableResult
    func validate(_ request: DeliveryRequest, on connection: PostgresConnection) async throws -> (DeliveryAccepted, PlanningService) {
        let service = try await ServiceCatalog.service(named: request.service, on: connection, logger: logger)
        let now = clock()
        var problems: [String] = []
        var resolved = request
        var template: DeliveryRequest.TemplateReference?
        do {
            let segmented = try await DeliverySegments.resolve(request, service: service, on: connection, logger: logger)
            (resolved, template) = try await DeliveryTemplates.resolve(segmented, service: service, on: connection, logger: logger)
        } catch let rejection as DeliveryRejection {
            problems.append(rejection.reason)
        }
        problems += DeliveryRequestValidator.problems(of: resolved, service: service, now: now)
        guard problems.isEmpty, let service else {
            throw AdminError(status: 400, reason: problems.first ?? "invalid request", problems: problems)
        }
        // The preview's placeholder id: `_dId` "0", never a real delivery's.
        var accepted = try DeliveryRequestValidator.validate(resolved, service: service, now: now, deliveryId: "0")
        accepted.template = template
        return (accepted, service)
    }

    private func acceptedDelivery(requestId: String, on connection: PostgresConnection) async throws -> Submission? {
        let rows = try await connection.query(
            "SELECT delivery_id, status FROM push.delivery_plans WHERE request_id = \(requestId)", logger: logger)
        for try await (deliveryId, status) in rows.decode((String, String).self) {
            return Submission(requestId: requestId, deliveryId: deliveryId, status: status, alreadySubmitted: true)
        }
        return nil
    }

    /// The id this requestId will get: reserved now from `push.delivery_ids`, or the one a
    /// submission before reserved.
    private func reserve(requestId: String, on connection: PostgresConnection) async throws -> Submission {
        let inserted = try await connection.query(
            """
            INSERT INTO push.delivery_id_reservations (request_id, delivery_id)
            VALUES (\(requestId), nextval('push.delivery_ids')::text)
            ON CONFLICT (request_id) DO NOTHING
            RETURNING delivery_id
            """,
            logger: logger)
        for try await id in inserted.decode(String.self) {
            return Submission(requestId: requestId, deliveryId: id, status: "submitted", alreadySubmitted: false)
        }
        let existing = try await connection.query(
            "SELECT delivery_id FROM push.delivery_id_reservations WHERE request_id = \(requestId)", logger: logger)
        for try await id in existing.decode(String.self) {
            return Submission(requestId: requestId, deliveryId: id, status: "submitted", alreadySubmitted: true)
        }
        throw AdminError(status: 500, reason: "the delivery id reservation of \(requestId) vanished")
    }

    // MARK: Requests

    /// What became of a requestId (`GET /admin/v1/delivery-requests/{requestId}`).
    package struct RequestState: Codable, Sendable, Equatable {
        package var requestId: String
        /// `accepted` (a delivery exists: `deliveryId`), `rejected` (`reasons`, most recent
        /// first), or `submitted` (published over HTTP, not yet read by the intake).
        package var state: String
        package var deliveryId: String?
        package var reasons: [String]?
    }

    /// The service of a delivery (`push.deliveries`); nil for an unknown one.
    package func serviceName(deliveryId: String) async throws -> String? {
        let rows = try await postgres.query("SELECT service_name FROM push.deliveries WHERE delivery_id = \(deliveryId)", logger: logger)
        for try await name in rows.decode(String.self) { return name }
        return nil
    }

    package func requestState(requestId: String) async throws -> RequestState? {
        try await postgres.withConnection { connection in
            if let accepted = try await acceptedDelivery(requestId: requestId, on: connection) {
                return RequestState(requestId: requestId, state: "accepted", deliveryId: accepted.deliveryId)
            }
            let rejections = try await connection.query(
                "SELECT reason FROM push.delivery_rejections WHERE request_id = \(requestId) ORDER BY rejected_at DESC", logger: logger)
            var reasons: [String] = []
            for try await reason in rejections.decode(String.self) { reasons.append(reason) }
            let reservations = try await connection.query(
                "SELECT delivery_id FROM push.delivery_id_reservations WHERE request_id = \(requestId)", logger: logger)
            for try await id in reservations.decode(String.self) where reasons.isEmpty {
                return RequestState(requestId: requestId, state: "submitted", deliveryId: id)
            }
            return reasons.isEmpty ? nil : RequestState(requestId: requestId, state: "rejected", reasons: reasons)
        }
    }
}
