import Crypto
import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents

/// The steps of one chunk of a fan-out, in the order `DeliveryFanOut.plan` runs them.
extension DeliveryFanOut {
    /// What stays the same for the whole fan-out of one delivery, read once before the first
    /// chunk.
    struct FanOutContext {
        var deliveryId: String { delivery.deliveryId }
        let delivery: DeliveryAccepted
        let factory: MessageFactory
        /// The platform of each targeted app, for the exclusions.
        let platforms: [UUID: Platform]
        /// The message topics this delivery publishes to, sorted.
        let topics: [String]
        /// The service's logger with `delivery.id`.
        let logger: Logger
        /// The service's frequency cap, for a bulk delivery to its audience (nil for a
        /// transactional one, a proof, or a service without a cap).
        let cap: FrequencyCap?
    }

    /// One page of the audience made into what is published and what is recorded.
    struct Chunk {
        var messages: [PlannedMessage]
        var exclusions: [DeliveryExclusionsRecorded.Exclusion]
        /// The last subscription of the page: the cursor once the chunk is done.
        var end: Cursor
        var plannedAt: Date
    }

    /// End offsets of the message topics and when they were read: the mark written with each
    /// chunk, re-read only every `recoveryMarkIntervalMilliseconds` (an older mark is lower,
    /// which only means reading back more after a crash).
    struct TopicsMark {
        var offsets: [String: [Int32: Int64]]
        var at: ContinuousClock.Instant
    }

    /// Reads the delivery's apps from the catalog projection and parses its templates once:
    /// everything the chunks share.
    func prepare(_ delivery: DeliveryAccepted, on connection: PostgresConnection) async throws -> FanOutContext {
        var logger = self.logger
        logger[metadataKey: "delivery.id"] = .string(delivery.deliveryId)
        let apps = try await ServiceCatalog.apps(ids: delivery.apps.map(\.appId), on: connection, logger: logger)
        let capped = delivery.lane == .bulk && delivery.proof == nil
        return FanOutContext(
            delivery: delivery,
            factory: try MessageFactory(delivery: delivery, apps: apps),
            platforms: Dictionary(apps.map { ($0.appId, $0.platform) }, uniquingKeysWith: { first, _ in first }),
            topics: Set(apps.map { catalog.messages($0.platform, lane: delivery.lane).name }).sorted(),
            logger: logger,
            cap: capped ? try await ServiceCatalog.frequencyCap(serviceId: delivery.serviceId, on: connection, logger: logger) : nil
        )
    }

    /// A chunk's size: `PLANNER_CHUNK_SIZE`, at most one second of a throttled delivery's rate
    /// (at least 100), so that a slow delivery's turn does not hold the others of its lane for
    /// long (docs/planning.md, "Fair fan-out").
    func chunkSize(of delivery: DeliveryAccepted) -> Int {
        guard let perSecond = delivery.throttlePerSecond else { return settings.chunkSize }
        return min(settings.chunkSize, max(perSecond, 100))
    }

    /// The next page of the shard's audience after its cursor (keyset pagination, up to the
    /// shard's end); when a chunk is pending, exactly that chunk again, up to its recorded end.
    func readAudiencePage(of fanOut: FanOutContext, after state: PlanState, on connection: PostgresConnection) async throws -> [TargetedSubscription] {
        try await TargetingQuery.next(
            delivery: fanOut.delivery, after: state.cursor, through: state.pending?.end ?? state.end,
            limit: state.pending == nil ? chunkSize(of: fanOut.delivery) : Int(Int32.max),
            withParams: fanOut.factory.needsParams, withLanguage: fanOut.factory.needsLanguage, dataKeys: dataKeys, on: connection, logger: fanOut.logger
        )
    }

    /// The frequency cap: each enabled row whose person (its data-key subject: the user key, or
    /// the device without one) already got `cap.messages` other bulk deliveries of the service
    /// in the last `cap.periodHours` becomes an exclusion, reason `frequency-cap`; except a row
    /// whose message the broker already stored (a resumed chunk: it was sent, it stays a
    /// message). The people left are recorded against the cap (`push.frequency_log`) in the same
    /// transaction, before anything is published, and the transactions of one service's capped
    /// chunks take turns (a transaction-level advisory lock on the service): two planners fanning
    /// out two deliveries of the service at once each see what the other admitted, so nobody
    /// gets more than the cap (docs/delivery-requests.md, "Frequency cap").
    func applyFrequencyCap(to rows: [TargetedSubscription], of fanOut: FanOutContext, stored: StoredMessages, on connection: PostgresConnection)
        async throws -> [TargetedSubscription]
    {
        guard let cap = fanOut.cap else { return rows }
        let subjects = Array(Set(rows.compactMap { $0.disabled ? nil : $0.subjectKey?.id }))
        guard !subjects.isEmpty else { return rows }
        let (serviceId, deliveryId, logger) = (fanOut.delivery.serviceId, fanOut.deliveryId, fanOut.logger)
        // The subjects whose messages the broker already stored count whatever the cap says.
        let sent = Array(
            Set(
                rows.compactMap { row -> UUID? in
                    guard !row.disabled, let subject = row.subjectKey?.id, stored.messageIds.contains(fanOut.factory.messageId(for: row)) else { return nil }
                    return subject
                }))
        let over = try await connection.withTransaction(logger: logger) { connection -> Set<UUID> in
            try await connection.query(
                "SELECT pg_advisory_xact_lock(hashtextextended('push.frequency_log:' || \(serviceId)::text, 0))", logger: logger)
            let capped = try await connection.query(
                """
                WITH over AS (
                    SELECT subject_id FROM push.frequency_log
                    WHERE service_id = \(serviceId) AND subject_id = ANY(\(subjects))
                      AND planned_at > now() - \(cap.periodHours)::int * interval '1 hour' AND delivery_id <> \(deliveryId)
                    GROUP BY subject_id HAVING count(*) >= \(cap.messages)
                ), admitted AS (
                    INSERT INTO push.frequency_log (service_id, subject_id, delivery_id, planned_at)
                    SELECT \(serviceId), s, \(deliveryId), now() FROM unnest(\(subjects)::uuid[]) AS s
                    WHERE s NOT IN (SELECT subject_id FROM over) OR s = ANY(\(sent)::uuid[])
                    ORDER BY s
                    ON CONFLICT DO NOTHING
                )
                SELECT subject_id FROM over
                """,
                logger: logger)
            var over: Set<UUID> = []
            for try await subject in capped.decode(UUID.self) { over.insert(subject) }
            return over
        }
        guard !over.isEmpty else { return rows }
        return rows.map { row in
            guard !row.disabled, let subject = row.subjectKey?.id, over.contains(subject),
                !stored.messageIds.contains(fanOut.factory.messageId(for: row))
            else { return row }
            var excluded = row
            excluded.disabled = true
            excluded.exclusionReason = Self.frequencyCapReason
            return excluded
        }
    }

    /// `exclusion_log.reason` of a device left out by its service's frequency cap.
    static let frequencyCapReason = "frequency-cap"

    /// The broadLog ids for the page's messages: a new block for a new chunk (no round trip per
    /// message); for a resumed chunk the blocks its mark recorded, without the ids of messages
    /// the broker already stored, plus a new block (recorded in the mark) if devices were added
    /// inside the chunk since.
    func broadLogIds(
        for rows: [TargetedSubscription], of fanOut: FanOutContext, stored: StoredMessages, state: inout PlanState, on connection: PostgresConnection
    )
        async throws -> BroadLogIdAssigner
    {
        let enabled = rows.lazy.filter { !$0.disabled }
        guard var pending = state.pending else {
            let count = enabled.count
            return BroadLogIdAssigner(blocks: count > 0 ? [try await BroadLogIds.reserve(count, on: connection, logger: fanOut.logger)] : [])
        }
        var ids = BroadLogIdAssigner(blocks: pending.broadLogIds ?? [], taken: Set(stored.broadLogIds.values))
        let needed = enabled.count(where: { stored.broadLogIds[fanOut.factory.messageId(for: $0)] == nil })
        if ids.remaining < needed {
            ids.add(try await BroadLogIds.reserve(needed - ids.remaining, on: connection, logger: fanOut.logger))
            pending.broadLogIds = ids.blocks
            try await writeMark(pending, of: fanOut, shard: state.shard, on: connection)
            state.pending = pending
        }
        return ids
    }

    /// Each enabled device's message (or its failure at planning) and each disabled one's
    /// exclusion. This is the per-message path: no I/O, one pass over the page. A message the
    /// broker already stored keeps its broadLog id; the others take the next of `ids`.
    func buildChunk(of fanOut: FanOutContext, from rows: [TargetedSubscription], pending: PendingChunk?, stored: StoredMessages, ids: inout BroadLogIdAssigner)
        throws -> Chunk
    {
        let plannedAt = Date()
        var messages: [PlannedMessage] = []
        var exclusions: [DeliveryExclusionsRecorded.Exclusion] = []
        var nonces = SealNonces(count: rows.count)
        for row in rows {
            if row.disabled {
                // The audience is read from `apps`, so every row's app has a platform.
                guard let platform = fanOut.platforms[row.appId] else { continue }
                // By digest: the token stays out of push.delivery-events (event version 2).
                exclusions.append(
                    .init(
                        appId: row.appId, tokenDigest: TokenDigest.of(row.registrationToken), platform: platform,
                        reason: row.exclusionReason ?? "quarantined: disabled"))
                continue
            }
            let messageId = fanOut.factory.messageId(for: row)
            // `broadLogIds(for:)` reserved an id for every enabled row.
            guard let broadLogId = stored.broadLogIds[messageId] ?? ids.next() else { preconditionFailure("no broadLog id left for the chunk") }
            if let message = fanOut.factory.message(for: row, messageId: messageId, broadLogId: broadLogId, plannedAt: plannedAt) {
                messages.append(try Self.sealed(message, for: row, nonce: nonces.take()))
            }
        }
        // An empty page only comes with a pending chunk (otherwise the plan is finished).
        let end = rows.last.map { Cursor(appId: $0.appId, token: $0.registrationToken) } ?? pending!.end
        return Chunk(messages: messages, exclusions: exclusions, end: end, plannedAt: plannedAt)
    }

    /// The message as its record is written (version 2): token and content sealed under the
    /// device's subject key, which the targeting read or created (docs/architecture.md, "Erasure").
    static func sealed(_ message: PlannedMessage, for row: TargetedSubscription, nonce: AES.GCM.Nonce) throws -> PlannedMessage {
        if case .failed = message { return message }
        guard let subject = row.subjectKey else { throw SubjectKeyMissing() }
        switch message {
        case .apns(let apns): return .apns(try apns.sealed(subjectId: subject.id, key: subject.key, nonce: nonce))
        case .fcm(let fcm): return .fcm(try fcm.sealed(subjectId: subject.id, key: subject.key, nonce: nonce))
        case .failed: return message
        }
    }

    /// A targeted device reached sealing without a data key (the targeting reads or creates one
    /// for every enabled device first); the chunk is not published and is planned again.
    struct SubjectKeyMissing: Error, CustomStringConvertible {
        var description: String { "a targeted device has no data key to seal its message under" }
    }

    /// Records in the plan row that the chunk ending at `end` is being published, with the
    /// message topics' end offsets from before its first record and its broadLog ids: what a
    /// planner that finds the row after a crash reads back from.
    func markChunk(
        of fanOut: FanOutContext, shard: Int, ending end: Cursor, broadLogIds: [BroadLogIdBlock], mark: inout TopicsMark?, on connection: PostgresConnection
    ) async throws -> PendingChunk {
        let markInterval = Duration.milliseconds(settings.recoveryMarkIntervalMilliseconds)
        if mark == nil || ContinuousClock.now - mark!.at > markInterval {
            var offsets: [String: [Int32: Int64]] = [:]
            for topic in fanOut.topics { offsets[topic] = try await reader.endOffsets(topic: topic) }
            mark = TopicsMark(offsets: offsets, at: .now)
        }
        let pending = PendingChunk(end: end, offsets: mark!.offsets, broadLogIds: broadLogIds)
        try await writeMark(pending, of: fanOut, shard: shard, on: connection)
        return pending
    }

    /// Writes the chunk in flight into the shard's row.
    func writeMark(_ pending: PendingChunk, of fanOut: FanOutContext, shard: Int, on connection: PostgresConnection) async throws {
        let json = String(decoding: try JSONEncoder().encode(pending), as: UTF8.self)
        let deliveryId = fanOut.deliveryId
        try await connection.query(
            "UPDATE push.delivery_shards SET pending_chunk = \(json)::jsonb, updated_at = now() WHERE delivery_id = \(deliveryId) AND shard = \(shard)",
            logger: fanOut.logger)
    }

    /// Sends the records (paced when the delivery is throttled) and returns once the broker
    /// stored all of them; throws if any was not stored (the chunk is then resumed).
    func publish(_ records: [KafkaProducerRecord], limiter: inout FanOutRateLimiter?) async throws {
        guard !records.isEmpty else { return }
        let slice = limiter?.sliceSize ?? records.count
        var start = 0
        while start < records.count {
            let part = Array(records[start..<min(start + slice, records.count)])
            if limiter != nil { try await limiter!.acquire(part.count) }
            for result in await producer.send(part) {
                _ = try result.get()
            }
            start += part.count
        }
    }

    /// Once the broker stored the chunk, one transaction moves the shard's cursor past it, adds
    /// its counts to the shard and to the plan (the delivery's running totals), clears the mark
    /// and puts its planning failures and exclusions in the outbox (then wakes the outbox
    /// publisher). The plan row is updated first, as `finish` locks it first.
    func advanceCursor(of fanOut: FanOutContext, shard: Int, past chunk: Chunk, on connection: PostgresConnection) async throws -> ChunkCounts {
        let deliveryId = fanOut.deliveryId
        let logger = fanOut.logger
        let correlationId = fanOut.delivery.requestId
        let failures = chunk.messages.compactMap { if case .failed(let failure) = $0 { failure } else { nil } }
        var outbox = try failures.map {
            try PlannerOutbox.record(
                topic: catalog.messageResults.name, key: $0.message.messageId.uuidString.lowercased(), payload: $0, correlationId: correlationId)
        }
        if !chunk.exclusions.isEmpty {
            outbox.append(
                try PlannerOutbox.record(
                    topic: catalog.deliveryEvents.name, key: deliveryId,
                    payload: DeliveryExclusionsRecorded(deliveryId: deliveryId, exclusions: chunk.exclusions, excludedAt: chunk.plannedAt),
                    correlationId: correlationId
                ))
        }
        let counts = ChunkCounts(targeted: chunk.messages.count, excluded: chunk.exclusions.count, failed: failures.count)
        let (targeted, excluded, failed, end) = (counts.targeted, counts.excluded, counts.failed, chunk.end)
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                UPDATE push.delivery_plans SET
                    targeted = targeted + \(targeted), excluded = excluded + \(excluded), failed = failed + \(failed), updated_at = now()
                WHERE delivery_id = \(deliveryId)
                """,
                logger: logger
            )
            try await connection.query(
                """
                UPDATE push.delivery_shards SET cursor_app = \(end.appId), cursor_token = \(end.token), pending_chunk = NULL,
                    targeted = targeted + \(targeted), excluded = excluded + \(excluded), failed = failed + \(failed), updated_at = now()
                WHERE delivery_id = \(deliveryId) AND shard = \(shard)
                """,
                logger: logger
            )
            try await PlannerOutbox.insert(outbox, on: connection, logger: logger)
        }
        if !outbox.isEmpty { outboxWritten.signal() }
        return counts
    }
}
