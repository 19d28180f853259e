import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

extension DeliveryAdmin {
    /// What an operator can do to a delivery that is going out.
    package enum Control: String, Sendable, CaseIterable {
        case cancel, pause, resume

        /// The `delivery_controls` state the control leads to.
        var state: String {
            switch self {
            case .cancel: "cancelled"
            case .pause: "paused"
            case .resume: "active"
            }
        }
    }

    /// The answer to a control (202).
    package struct ControlAnswer: Codable, Sendable, Equatable {
        package var deliveryId: String
        /// `cancelled`, `paused` or `active`.
        package var state: String
        /// True once `delivery_controls` holds the new state, which the planner and every sender
        /// read within `PUSH_DELIVERY_CONTROLS_REFRESH_MS` (500 ms): from then on nothing more of a
        /// cancelled or paused delivery is handed to a provider. False if the deliveries
        /// projection did not apply it within 5 s (it will; the event is stored).
        package var applied: Bool
    }

    /// How long a control waits for the deliveries projection to apply its event.
    static let controlApplyTimeout: Duration = .seconds(5)

    /// Publishes `DeliveryCancelled`, `DeliveryPaused` or `DeliveryResumed` on
    /// `push.delivery-events` and waits until the deliveries projection applied it. Asking for
    /// the state a delivery is already in changes nothing; a cancelled delivery cannot be paused
    /// or resumed (409).
    package func control(_ control: Control, deliveryId: String) async throws -> ControlAnswer {
        let rows = try await postgres.query(
            """
            SELECT p.request_id, coalesce(c.state, 'active')
            FROM push.delivery_plans p LEFT JOIN push.delivery_controls c USING (delivery_id)
            WHERE p.delivery_id = \(deliveryId)
            """,
            logger: logger)
        var found: (requestId: String, state: String)?
        for try await row in rows.decode((String, String).self) { found = row }
        guard let (requestId, state) = found else { throw AdminError.notFound("no delivery \(deliveryId.prefix(64))") }
        if state == control.state { return ControlAnswer(deliveryId: deliveryId, state: state, applied: true) }
        if state == "cancelled" { throw AdminError(status: 409, reason: "delivery \(deliveryId) is cancelled: it cannot be \(control.state) again") }

        let now = clock()
        let record: KafkaProducerRecord
        let eventId: UUID
        switch control {
        case .cancel:
            let envelope = EventEnvelope(
                key: deliveryId, payload: DeliveryCancelled(deliveryId: deliveryId, cancelledAt: now), occurredAt: now, correlationId: requestId)
            (record, eventId) = (try KafkaProducerRecord(topic: eventsTopic, event: envelope), envelope.metadata.id)
        case .pause:
            let envelope = EventEnvelope(
                key: deliveryId, payload: DeliveryPaused(deliveryId: deliveryId, pausedAt: now), occurredAt: now, correlationId: requestId)
            (record, eventId) = (try KafkaProducerRecord(topic: eventsTopic, event: envelope), envelope.metadata.id)
        case .resume:
            let envelope = EventEnvelope(
                key: deliveryId, payload: DeliveryResumed(deliveryId: deliveryId, resumedAt: now), occurredAt: now, correlationId: requestId)
            (record, eventId) = (try KafkaProducerRecord(topic: eventsTopic, event: envelope), envelope.metadata.id)
        }
        do {
            _ = try await producer.send(record)
        } catch {
            throw AdminError(status: 503, reason: "the broker did not store the \(control.rawValue) (\(error)); ask again")
        }
        logger.notice("Delivery control stored", metadata: ["delivery.id": "\(deliveryId)", "control": "\(control.rawValue)"])
        let logger = logger
        let applied = try await ProjectionWait.deliveries.until(timeout: Self.controlApplyTimeout, postgres: postgres, logger: logger) { connection in
            let applied = try await connection.query(
                "SELECT event_id = \(eventId) OR state = 'cancelled' FROM push.delivery_controls WHERE delivery_id = \(deliveryId)", logger: logger)
            for try await done in applied.decode(Bool.self) where done { return true }
            return false
        }
        return ControlAnswer(deliveryId: deliveryId, state: control.state, applied: applied)
    }
}
