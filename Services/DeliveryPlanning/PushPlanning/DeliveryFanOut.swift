import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore
import ServiceLifecycle
import Synchronization

/// Plans accepted deliveries once their `sendAt` is due: targets the subscriptions in chunks,
/// builds one message per (app, token) and publishes it on `push.apns.messages` or
/// `push.fcm.messages`.
///
/// Crash safety without duplicates towards the providers: before publishing a chunk, the
/// plan row records the chunk's end (its last subscription) and a mark of the message topics'
/// end offsets. After the chunk is stored by the broker, one transaction moves the cursor past
/// it and clears the mark. A planner that finds a mark (the previous one died mid-chunk) reads
/// the topics back from the mark, and publishes only the chunk's messages that are not there.
/// Message ids are a function of (delivery, app, token), so the same device gets the same id;
/// the chunk's broadLog ids (the payload's `_mId`) are a block reserved for it and recorded with
/// the mark, so a resumed chunk hands out the same ones (`IntegerIds.swift`).
///
/// Lanes: a planner runs one fan-out per lane (`DeliveryPriority`), each planning only the
/// deliveries of its lane, so a transactional request is planned at once however big the bulk
/// delivery being fanned out meanwhile (docs/planning.md, "Lanes").
///
/// Shards: a delivery's audience is cut into key ranges of `push.subscriptions`
/// (`push.delivery_shards`, `PLANNER_SHARD_SIZE` subscriptions each) when planning starts. Each
/// shard is planned by one instance at a time (a session advisory lock per shard, held for a
/// turn), so N instances share one delivery; a dead instance's locks go with its connection, and
/// another instance resumes the shard from its cursor and its mark. The delivery is planned when
/// its last shard is (docs/planning.md, "Shards").
///
/// The steps of one chunk are in `DeliveryFanOut+Chunk.swift`, the plan row's state in
/// `DeliveryFanOut+PlanState.swift`, the message records and the read-back after a crash in
/// `DeliveryFanOut+Records.swift`.
package final class DeliveryFanOut: Service {
    let postgres: PostgresClient
    let producer: KafkaProducer
    let reader: KafkaLogReader
    let catalog: TopicCatalog
    let settings: PlanningSettings
    /// Wraps and opens the data keys the records are sealed under (`PUSH_DATA_KEYS_KEY`).
    let dataKeys: (any DataKeyWrapping)?
    /// The deliveries this fan-out plans: those of this priority.
    let lane: DeliveryPriority
    let logger: Logger
    let published = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "published")])
    let failedAtPlanning = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "failed")])
    let excludedCounter = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "excluded")])
    let recovered = Counter(label: "push_planner_recovered_chunks_total")
    let alreadyPublished = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "already_published")])
    /// `push_delivery_request_to_planned_seconds{lane}`: from a delivery's acceptance (or its
    /// send time, when later) to its last message record stored, once per delivery.
    let requestToPlanned: Metrics.Timer

    /// Raised by the intake after a commit that accepted a delivery: there may be work.
    let deliveriesAccepted: Wakeup
    /// Raised here after each commit that wrote to the outbox, for `PlannerOutboxPublisher`.
    let outboxWritten: Wakeup

    package init(
        postgres: PostgresClient, producer: KafkaProducer, reader: KafkaLogReader, catalog: TopicCatalog, settings: PlanningSettings,
        dataKeys: (any DataKeyWrapping)?, lane: DeliveryPriority = .bulk, deliveriesAccepted: Wakeup = Wakeup(), outboxWritten: Wakeup = Wakeup(),
        logger: Logger
    ) {
        self.dataKeys = dataKeys
        self.postgres = postgres
        self.producer = producer
        self.reader = reader
        self.catalog = catalog
        self.settings = settings
        self.lane = lane
        self.requestToPlanned = Metrics.Timer(
            label: "push_delivery_request_to_planned_seconds", dimensions: [("lane", lane.rawValue)], preferredDisplayUnit: .seconds)
        self.deliveriesAccepted = deliveriesAccepted
        self.outboxWritten = outboxWritten
        var logger = logger
        logger[metadataKey: "lane"] = .string(lane.rawValue)
        self.logger = logger
    }

    /// Plans what is due, in rounds of one chunk per due delivery (so that deliveries due together
    /// progress side by side, `planRounds`), then waits for the next work: a delivery the intake
    /// accepted (its signal), the next `sendAt` of a scheduled delivery (a clock deadline), or at most
    /// `idleWaitMilliseconds`, the backstop for what no signal of this process announces (a
    /// delivery another instance accepted while busy, a fan-out a dead instance left). After a
    /// failure it retries with a backoff instead.
    package func run() async throws {
        let retryInterval = Duration.milliseconds(settings.pollIntervalMilliseconds)
        let idleWait = Duration.milliseconds(settings.idleWaitMilliseconds)
        var failures = 0
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let wait: Duration
            do {
                try await planRounds()
                failures = 0
                wait = try await timeUntilNextSendAt().map { min($0, idleWait) } ?? idleWait
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                failures += 1
                logger.error("Delivery planning failed; it resumes from its last chunk", metadata: ["error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: min(retryInterval * (1 << min(failures, 5)), .seconds(10)))
                continue
            }
            await deliveriesAccepted.wait(atMost: wait, orGracefulShutdown: true)
        }
    }

    /// What a turn of one delivery left: more chunks, nothing (finished, cancelled, paused), or
    /// the delivery is another instance's.
    enum TurnResult {
        case more
        case done
        case busy
    }

    /// Plans every due delivery one chunk at a time, round after round, until none has chunks
    /// left: two bulk deliveries of a service are fanned out side by side, not one after the
    /// other (docs/planning.md, "Fair fan-out"). Each round reads what is due again, so a delivery
    /// accepted meanwhile joins the next round.
    ///
    /// `parallelShards` turns run side by side, each on its own connection and holding its own
    /// shard's lock, as that many instances would: one turn alone waited for PostgreSQL and the
    /// broker's acknowledgements most of the time (docs/planning.md, "Shards"). A turn that
    /// finds every open shard of every due delivery held by another ends, so a delivery of one
    /// shard is planned by one turn. The throttles (limiters) are shared by the turns and kept
    /// for the whole pass. The transactional lane runs one turn: its deliveries are small, and
    /// its latency must not wait for connections its other turns hold.
    func planRounds() async throws {
        let limiters = Limiters()
        let parallel = lane == .bulk ? max(1, settings.parallelShards) : 1
        try await withThrowingDiscardingTaskGroup { group in
            for _ in 0..<parallel {
                group.addTask { try await self.planRounds(limiters: limiters) }
            }
        }
    }

    private func planRounds(limiters: Limiters) async throws {
        var turns = Turns()
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            let due = try await dueDeliveries()
            turns.keep(due)
            limiters.keep(due)
            var more = false
            for deliveryId in due {
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                if try await planIfFree(deliveryId, chunks: 1, turns: &turns, limiters: limiters) == .more { more = true }
            }
            if !more { return }
        }
    }

    /// What one turn keeps from a delivery's chunk to the next: the shard it planned last, which
    /// it tries first (a shard stays with one turn while nobody else needs it, reading its
    /// range in order).
    struct Turns {
        var shards: [String: Int] = [:]

        mutating func keep(_ deliveries: [String]) {
            shards = shards.filter { deliveries.contains($0.key) }
        }
    }

    /// The deliveries' throttles, shared by the turns of a pass. A throttled delivery is one
    /// shard, so the turn holding that shard's lock is the only one using its limiter: it takes
    /// it under the lock and puts it back before unlocking.
    final class Limiters: Sendable {
        private let limiters = Mutex<[String: FanOutRateLimiter]>([:])

        func take(_ deliveryId: String) -> FanOutRateLimiter? { limiters.withLock { $0.removeValue(forKey: deliveryId) } }
        func put(_ limiter: FanOutRateLimiter?, for deliveryId: String) { limiters.withLock { $0[deliveryId] = limiter } }
        func keep(_ deliveries: [String]) { limiters.withLock { $0 = $0.filter { deliveries.contains($0.key) } } }
    }

    /// Ids of this lane's plans not finished whose `sendAt` has come, oldest first, 50 at a time;
    /// a paused delivery waits for its `DeliveryResumed`. A plan's lane is its accepted
    /// delivery's `priority` (absent in plans accepted before lanes: bulk).
    func dueDeliveries() async throws -> [String] {
        let rows = try await postgres.query(
            """
            SELECT delivery_id FROM push.delivery_plans p
            WHERE status <> 'planned' AND send_at <= now() AND coalesce(accepted->>'priority', 'bulk') = \(lane.rawValue)
              AND NOT EXISTS (SELECT 1 FROM push.delivery_controls c WHERE c.delivery_id = p.delivery_id AND c.state = 'paused')
            ORDER BY send_at, delivery_id LIMIT 50
            """,
            logger: logger
        )
        var ids: [String] = []
        for try await id in rows.decode(String.self) { ids.append(id) }
        return ids
    }

    /// How long until the earliest `sendAt` of a plan not yet due, by PostgreSQL's clock (the
    /// one `dueDeliveries` compares with); nil when there is none.
    func timeUntilNextSendAt() async throws -> Duration? {
        let rows = try await postgres.query(
            """
            SELECT EXTRACT(EPOCH FROM min(send_at) - now())::float8 FROM push.delivery_plans
            WHERE status <> 'planned' AND send_at > now() AND coalesce(accepted->>'priority', 'bulk') = \(lane.rawValue)
            """,
            logger: logger
        )
        var seconds: Double?
        for try await value in rows.decode(Double?.self) { seconds = value }
        // A millisecond more, so that the plan is due when the wait ends.
        return seconds.map { .milliseconds(Int64(($0 * 1000).rounded(.up)) + 1) }
    }

    /// `active`, `paused` or `cancelled` (`push.delivery_controls`).
    func control(of deliveryId: String, on connection: PostgresConnection) async throws -> String {
        let rows = try await connection.query("SELECT state FROM push.delivery_controls WHERE delivery_id = \(deliveryId)", logger: logger)
        for try await state in rows.decode(String.self) { return state }
        return "active"
    }

    /// Plans up to `chunks` chunks of one shard of the delivery that no other instance or turn holds:
    /// starts the plan if it is new (cuts it into shards), then tries the shard it planned last,
    /// then the others in random order (instances spread over the shards), taking the first whose
    /// advisory lock is free. The lock is held for the turn only: between turns another instance
    /// may continue the shard from its cursor, which is all the state a turn needs. `.busy` when
    /// every open shard is another's; `.more` when a shard ended but others are open.
    func planIfFree(_ deliveryId: String, chunks: Int = .max, turns: inout Turns, limiters: Limiters) async throws -> TurnResult {
        let logger = self.logger
        let preferred = turns.shards[deliveryId]
        let result = try await postgres.withConnection { connection -> (TurnResult, Int?) in
            guard let (delivery, status) = try await self.loadPlan(deliveryId, on: connection), status != "planned" else { return (.done, nil) }
            let fanOut = try await self.prepare(delivery, on: connection)
            if status == "accepted" { try await self.recordStarted(fanOut, on: connection) }
            var shards = try await self.openShards(deliveryId, on: connection).shuffled()
            if let preferred, let index = shards.firstIndex(of: preferred) { shards.swapAt(0, index) }
            for shard in shards {
                let key = "push-plan:\(deliveryId):\(shard)"
                let lock = try await connection.query("SELECT pg_try_advisory_lock(hashtext(\(key)))", logger: logger)
                var locked = false
                for try await value in lock.decode(Bool.self) { locked = value }
                guard locked else { continue }
                var limiter = limiters.take(deliveryId)
                let result: TurnResult
                do {
                    // Read under the lock: another instance may have moved it since.
                    if let state = try await self.loadShard(shard, of: delivery, status: "planning", on: connection) {
                        result = try await self.plan(state, fanOut: fanOut, on: connection, chunks: chunks, limiter: &limiter)
                    } else {
                        result = .done
                    }
                } catch {
                    limiters.put(limiter, for: deliveryId)
                    _ = try? await connection.query("SELECT pg_advisory_unlock(hashtext(\(key)))", logger: logger)
                    throw error
                }
                limiters.put(limiter, for: deliveryId)
                _ = try await connection.query("SELECT pg_advisory_unlock(hashtext(\(key)))", logger: logger)
                return (result == .done && shards.count > 1 ? .more : result, shard)
            }
            return (shards.isEmpty ? .done : .busy, nil)
        }
        if let shard = result.1 { turns.shards[deliveryId] = shard }
        return result.0
    }

    /// Fans one shard of the delivery out from where its row stands; the caller holds the shard's
    /// advisory lock. Each turn of the loop is one chunk: read the audience page, build its
    /// messages and exclusions, mark the chunk (or, resuming after a crash, drop what the
    /// broker already stored), publish, then advance the cursor. An empty page ends the shard
    /// (and the plan, when it was the last one).
    /// A turn plans at most `chunks` chunks and says whether the delivery has more; `limiter`
    /// carries the delivery's throttle from one turn to the next.
    func plan(
        _ state: PlanState, fanOut: FanOutContext, on connection: PostgresConnection, chunks: Int, limiter: inout FanOutRateLimiter?
    ) async throws -> TurnResult {
        var state = state
        let deliveryId = fanOut.deliveryId
        // At the senders' sustained pace (85 % of the rate, docs/senders.md "Throttle"), not at
        // the rate: faster, the messages the senders cannot send yet would pile up in their memory.
        if limiter == nil { limiter = fanOut.delivery.throttlePerSecond.map { FanOutRateLimiter(perSecond: ThrottleRate(perSecond: $0).sustainedPerSecond) } }
        var mark: TopicsMark?
        var planned = 0
        while true {
            // The turn is over; a chunk left marked is finished first (its mark promises the
            // read-back exactly those messages), which the loop does before counting it.
            if planned >= chunks, state.pending == nil { return .more }
            try Task.checkCancellation()
            // An operator's control, read between chunks (a chunk marked before it was asked
            // for is published whole: its mark promises the read-back exactly those messages).
            if state.pending == nil {
                switch try await control(of: deliveryId, on: connection) {
                case "cancelled":
                    fanOut.logger.notice("Delivery cancelled; fan-out stopped", metadata: ["targeted": "\(state.targeted)"])
                    try await finish(state, on: connection, logger: fanOut.logger)
                    return .done
                case "paused":
                    fanOut.logger.notice("Delivery paused; fan-out waits for its resume", metadata: ["targeted": "\(state.targeted)"])
                    return .done
                default: break
                }
            }
            var rows = try await readAudiencePage(of: fanOut, after: state, on: connection)
            if rows.isEmpty && state.pending == nil {
                try await finish(state, on: connection, logger: fanOut.logger)
                return .done
            }
            // Resuming a chunk a previous planner left marked: what the broker already stored
            // keeps its ids and is not published again.
            var stored = StoredMessages()
            if let pending = state.pending { stored = try await readBack(of: fanOut, since: pending) }
            rows = try await applyFrequencyCap(to: rows, of: fanOut, stored: stored, on: connection)
            var ids = try await broadLogIds(for: rows, of: fanOut, stored: stored, state: &state, on: connection)
            let chunk = try buildChunk(of: fanOut, from: rows, pending: state.pending, stored: stored, ids: &ids)
            // Records are built before the chunk is marked, so that the mark is held only
            // while publishing.
            var records = try messageRecords(of: fanOut, chunk)
            if state.pending != nil {
                let rebuilt = records.count
                records.removeAll { stored.contains($0) }
                recovered.increment()
                alreadyPublished.increment(by: rebuilt - records.count)
                fanOut.logger.notice(
                    "Resuming an interrupted chunk",
                    metadata: ["shard": "\(state.shard)", "already.published": "\(rebuilt - records.count)", "to.publish": "\(records.count)"])
            } else {
                state.pending = try await markChunk(of: fanOut, shard: state.shard, ending: chunk.end, broadLogIds: ids.blocks, mark: &mark, on: connection)
            }
            try await publish(records, limiter: &limiter)
            let counts = try await advanceCursor(of: fanOut, shard: state.shard, past: chunk, on: connection)
            state.advance(to: chunk.end, by: counts)
            published.increment(by: records.count)
            failedAtPlanning.increment(by: counts.failed)
            excludedCounter.increment(by: counts.excluded)
            planned += 1
        }
    }
}
