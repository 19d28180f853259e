import Foundation
import Logging
import PostgresNIO
import PushEvents

extension DeliveryFanOut {
    /// The state of a plan row.
    struct PlanState {
        var delivery: DeliveryAccepted
        var status: String
        var cursor: Cursor
        var targeted: Int
        var excluded: Int
        var failed: Int
        var pending: PendingChunk?

        /// The row after a chunk's transaction: the cursor past the chunk, its counts added,
        /// no chunk pending.
        mutating func advance(to end: Cursor, by counts: ChunkCounts) {
            cursor = end
            pending = nil
            targeted += counts.targeted
            excluded += counts.excluded
            failed += counts.failed
        }
    }

    /// A position in the (app_id, registration_token) order of subscriptions.
    struct Cursor: Codable, Hashable {
        var appId: UUID
        var token: String
        static let start = Cursor(appId: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), token: "")
    }

    /// The chunk being published: its last subscription, end offsets of the message topics
    /// taken before any of its records was sent, and the broadLog ids reserved for its messages
    /// (absent in marks written before broadLog ids existed).
    struct PendingChunk: Codable, Hashable {
        var end: Cursor
        var offsets: [String: [Int32: Int64]]
        var broadLogIds: [BroadLogIdBlock]?
    }

    /// What a chunk adds to the plan row's counts.
    struct ChunkCounts {
        var targeted: Int
        var excluded: Int
        var failed: Int
    }

    /// Reads the plan row: the accepted delivery, where the fan-out stands, and the chunk a
    /// previous planner left half published (if any). Nil when there is no such delivery.
    func loadPlan(_ deliveryId: String, on connection: PostgresConnection) async throws -> PlanState? {
        let rows = try await connection.query(
            """
            SELECT accepted::text, status, cursor_app, cursor_token, targeted, excluded, failed, pending_chunk::text
            FROM push.delivery_plans WHERE delivery_id = \(deliveryId)
            """,
            logger: logger
        )
        for try await (accepted, status, cursorApp, cursorToken, targeted, excluded, failed, pending)
            in rows.decode((String, String, UUID?, String?, Int64, Int64, Int64, String?).self)
        {
            let delivery = try EventJSON.decoder.decode(DeliveryAccepted.self, from: Data(accepted.utf8))
            let cursor = cursorApp.map { Cursor(appId: $0, token: cursorToken ?? "") } ?? .start
            let chunk = try pending.map { try JSONDecoder().decode(PendingChunk.self, from: Data($0.utf8)) }
            return PlanState(
                delivery: delivery, status: status, cursor: cursor, targeted: Int(targeted), excluded: Int(excluded), failed: Int(failed), pending: chunk)
        }
        return nil
    }

    /// Moves an accepted plan to `planning` and puts `DeliveryPlanningStarted` in the outbox,
    /// in one transaction, so that the event is published once the state is durable.
    func recordStarted(_ fanOut: FanOutContext, on connection: PostgresConnection) async throws {
        let deliveryId = fanOut.deliveryId
        let logger = fanOut.logger
        let started = DeliveryPlanningStarted(deliveryId: deliveryId, startedAt: Date())
        let record = try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: deliveryId, payload: started, correlationId: fanOut.delivery.requestId)
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                "UPDATE push.delivery_plans SET status = 'planning', started_at = now(), updated_at = now() WHERE delivery_id = \(deliveryId)", logger: logger)
            try await PlannerOutbox.insert([record], on: connection, logger: logger)
        }
        outboxWritten.signal()
        logger.info("Delivery planning started")
    }

    /// Ends the plan once the audience is exhausted: status `planned` and `DeliveryPlanned`
    /// with the totals in the outbox, in one transaction.
    func finish(_ state: PlanState, on connection: PostgresConnection, logger: Logger) async throws {
        let deliveryId = state.delivery.deliveryId
        let planned = DeliveryPlanned(deliveryId: deliveryId, targeted: state.targeted, excluded: state.excluded, failed: state.failed, plannedAt: Date())
        let record = try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: deliveryId, payload: planned, correlationId: state.delivery.requestId)
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                "UPDATE push.delivery_plans SET status = 'planned', planned_at = now(), updated_at = now() WHERE delivery_id = \(deliveryId)", logger: logger)
            try await PlannerOutbox.insert([record], on: connection, logger: logger)
        }
        outboxWritten.signal()
        logger.info("Delivery planned", metadata: ["targeted": "\(state.targeted)", "excluded": "\(state.excluded)", "failed": "\(state.failed)"])
    }
}
