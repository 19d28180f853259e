import Foundation
import Logging
import PostgresNIO
import PushEvents

extension DeliveryFanOut {
    /// The state of one shard of a plan: the delivery, the plan's status, the shard's key range
    /// end, cursor, counts and chunk in flight (`push.delivery_shards`).
    struct PlanState {
        var delivery: DeliveryAccepted
        var status: String
        /// The shard's number and the last key of its range (inclusive); nil: to the last
        /// subscription.
        var shard: Int
        var end: Cursor?
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

    /// Reads the plan row: the accepted delivery and its status. Nil when there is no such
    /// delivery.
    func loadPlan(_ deliveryId: String, on connection: PostgresConnection) async throws -> (delivery: DeliveryAccepted, status: String)? {
        let rows = try await connection.query(
            "SELECT accepted::text, status FROM push.delivery_plans WHERE delivery_id = \(deliveryId)", logger: logger)
        for try await (accepted, status) in rows.decode((String, String).self) {
            return (try EventJSON.decoder.decode(DeliveryAccepted.self, from: Data(accepted.utf8)), status)
        }
        return nil
    }

    /// The shards of the delivery not planned yet, in shard order.
    func openShards(_ deliveryId: String, on connection: PostgresConnection) async throws -> [Int] {
        let rows = try await connection.query(
            "SELECT shard FROM push.delivery_shards WHERE delivery_id = \(deliveryId) AND status <> 'planned' ORDER BY shard", logger: logger)
        var shards: [Int] = []
        for try await shard in rows.decode(Int.self) { shards.append(shard) }
        return shards
    }

    /// Reads a shard's row: where its fan-out stands and the chunk a previous planner left half
    /// published (if any). Nil when the shard is planned (or absent).
    func loadShard(_ shard: Int, of delivery: DeliveryAccepted, status: String, on connection: PostgresConnection) async throws -> PlanState? {
        let deliveryId = delivery.deliveryId
        let rows = try await connection.query(
            """
            SELECT cursor_app, cursor_token, end_app, end_token, targeted, excluded, failed, pending_chunk::text
            FROM push.delivery_shards WHERE delivery_id = \(deliveryId) AND shard = \(shard) AND status <> 'planned'
            """,
            logger: logger
        )
        for try await (cursorApp, cursorToken, endApp, endToken, targeted, excluded, failed, pending)
            in rows.decode((UUID?, String?, UUID?, String?, Int64, Int64, Int64, String?).self)
        {
            let cursor = cursorApp.map { Cursor(appId: $0, token: cursorToken ?? "") } ?? .start
            let end = endApp.map { Cursor(appId: $0, token: endToken ?? "") }
            let chunk = try pending.map { try JSONDecoder().decode(PendingChunk.self, from: Data($0.utf8)) }
            return PlanState(
                delivery: delivery, status: status, shard: shard, end: end, cursor: cursor, targeted: Int(targeted), excluded: Int(excluded),
                failed: Int(failed), pending: chunk)
        }
        return nil
    }

    /// Where the delivery's audience is cut into shards: every `shardSize`-th subscription of
    /// its apps in (app_id, registration_token) order, the key order the fan-out reads in (so
    /// each shard is an index range and keeps keyset pagination). None (one shard) when the
    /// apps hold at most `shardSize` subscriptions; when the delivery is throttled (its rate
    /// bounds it, and one shard keeps the rate with one limiter); and when its audience is a
    /// list (`userKeys`, a proof's recipients): the list bounds it, the index on user keys finds
    /// it, and cutting the apps' whole key range for it would cost a scan of every subscription
    /// before a one-person notification starts (docs/planning.md, "Shards").
    func shardBoundaries(of delivery: DeliveryAccepted, on connection: PostgresConnection, logger: Logger) async throws -> [Cursor] {
        guard delivery.throttlePerSecond == nil, delivery.proof == nil, !delivery.audience.isUserKeyList else { return [] }
        let apps = delivery.apps.map(\.appId)
        let size = settings.shardSize
        var total = 0
        for try await count in try await connection.query(
            "SELECT count(*)::int8 FROM push.subscriptions WHERE app_id = ANY(\(apps))", logger: logger
        ).decode(Int64.self) {
            total = Int(count)
        }
        guard total > size else { return [] }
        let rows = try await connection.query(
            """
            SELECT app_id, registration_token FROM (
                SELECT app_id, registration_token, row_number() OVER (ORDER BY app_id, registration_token) AS n
                FROM push.subscriptions WHERE app_id = ANY(\(apps))
            ) s
            WHERE n % \(Int64(size)) = 0 AND n < \(Int64(total))
            ORDER BY app_id, registration_token
            """,
            logger: logger
        )
        var boundaries: [Cursor] = []
        for try await (appId, token) in rows.decode((UUID, String).self) { boundaries.append(Cursor(appId: appId, token: token)) }
        return boundaries
    }

    /// Moves an accepted plan to `planning`, cuts its audience into shards and puts
    /// `DeliveryPlanningStarted` in the outbox, in one transaction, so that the event is
    /// published once the state is durable. The plan row is locked first: of two instances
    /// starting the same delivery, the second finds it `planning` and does nothing.
    func recordStarted(_ fanOut: FanOutContext, on connection: PostgresConnection) async throws {
        let deliveryId = fanOut.deliveryId
        let logger = fanOut.logger
        let started = DeliveryPlanningStarted(deliveryId: deliveryId, startedAt: Date())
        let record = try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: deliveryId, payload: started, correlationId: fanOut.delivery.requestId)
        let shards = try await connection.withTransaction(logger: logger) { connection -> Int? in
            var status = ""
            for try await value in try await connection.query(
                "SELECT status FROM push.delivery_plans WHERE delivery_id = \(deliveryId) FOR UPDATE", logger: logger
            ).decode(String.self) {
                status = value
            }
            guard status == "accepted" else { return nil }
            let boundaries = try await shardBoundaries(of: fanOut.delivery, on: connection, logger: logger)
            for shard in 0...boundaries.count {
                let start = shard == 0 ? nil : boundaries[shard - 1]
                let end = shard == boundaries.count ? nil : boundaries[shard]
                try await connection.query(
                    """
                    INSERT INTO push.delivery_shards (delivery_id, shard, start_app, start_token, end_app, end_token, cursor_app, cursor_token)
                    VALUES (\(deliveryId), \(shard), \(start?.appId), \(start?.token), \(end?.appId), \(end?.token), \(start?.appId), \(start?.token))
                    """,
                    logger: logger
                )
            }
            try await connection.query(
                "UPDATE push.delivery_plans SET status = 'planning', started_at = now(), updated_at = now() WHERE delivery_id = \(deliveryId)", logger: logger)
            try await PlannerOutbox.insert([record], on: connection, logger: logger)
            return boundaries.count + 1
        }
        guard let shards else { return }
        outboxWritten.signal()
        logger.info("Delivery planning started", metadata: ["shards": "\(shards)"])
    }

    /// Ends a shard once its range is exhausted (or the delivery cancelled), keeping no
    /// registration token: its range's bounds and cursor are of no use once it is planned, and
    /// an erasure must not leave a token behind in them. The shard that is
    /// the delivery's last also ends the plan: status `planned` and `DeliveryPlanned` with the
    /// plan's totals (the sums of its shards' chunks) in the outbox, in the same transaction.
    /// The plan row is locked first, so of two shards ending at once the second sees the first
    /// planned: the delivery is planned exactly once.
    func finish(_ state: PlanState, on connection: PostgresConnection, logger: Logger) async throws {
        let deliveryId = state.delivery.deliveryId
        let shard = state.shard
        let catalog = self.catalog
        let planned = try await connection.withTransaction(logger: logger) { connection -> (Int64, Int64, Int64)? in
            var totals: (Int64, Int64, Int64, String)?
            for try await row in try await connection.query(
                "SELECT targeted, excluded, failed, status FROM push.delivery_plans WHERE delivery_id = \(deliveryId) FOR UPDATE", logger: logger
            ).decode((Int64, Int64, Int64, String).self) {
                totals = row
            }
            try await connection.query(
                """
                UPDATE push.delivery_shards
                SET status = 'planned', pending_chunk = NULL, start_token = NULL, end_token = NULL, cursor_token = NULL,
                    planned_at = now(), updated_at = now()
                WHERE delivery_id = \(deliveryId) AND shard = \(shard)
                """,
                logger: logger
            )
            var open = 0
            for try await count in try await connection.query(
                "SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(deliveryId) AND status <> 'planned'", logger: logger
            ).decode(Int.self) {
                open = count
            }
            guard open == 0, let (targeted, excluded, failed, status) = totals, status != "planned" else { return nil }
            let event = DeliveryPlanned(deliveryId: deliveryId, targeted: Int(targeted), excluded: Int(excluded), failed: Int(failed), plannedAt: Date())
            let record = try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: deliveryId, payload: event, correlationId: state.delivery.requestId)
            // Nothing reads a planned delivery's recipients again: the plan keeps their counts,
            // as push.deliveries does (docs/architecture.md, "Erasure").
            let counted = String(decoding: try EventJSON.encoder.encode(state.delivery.recipientsCounted), as: UTF8.self)
            try await connection.query(
                """
                UPDATE push.delivery_plans SET status = 'planned', planned_at = now(), updated_at = now(), accepted = \(counted)::jsonb
                WHERE delivery_id = \(deliveryId)
                """,
                logger: logger)
            try await PlannerOutbox.insert([record], on: connection, logger: logger)
            return (targeted, excluded, failed)
        }
        logger.debug(
            "Shard planned", metadata: ["shard": "\(shard)", "targeted": "\(state.targeted)", "excluded": "\(state.excluded)", "failed": "\(state.failed)"])
        guard let (targeted, excluded, failed) = planned else { return }
        let due = max(state.delivery.acceptedAt, state.delivery.sendAt)
        requestToPlanned.recordNanoseconds(Int64(max(0, Date().timeIntervalSince(due)) * 1e9))
        outboxWritten.signal()
        logger.info("Delivery planned", metadata: ["targeted": "\(targeted)", "excluded": "\(excluded)", "failed": "\(failed)"])
    }
}
