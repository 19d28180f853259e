import Foundation
import Kafka
import Logging
import Metrics
import PostgresNIO
import PushEvents
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
/// Message ids are a function of (delivery, app, token), so the same device gets the same id.
///
/// Each delivery is planned by one instance at a time (a session advisory lock held while it
/// runs); a dead instance's lock goes with its connection, and another instance resumes.
package final class DeliveryFanOut: Service {
    private let postgres: PostgresClient
    private let producer: KafkaProducer
    private let reader: KafkaLogReader
    private let catalog: TopicCatalog
    private let settings: PlanningSettings
    private let logger: Logger
    private let published = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "published")])
    private let failedAtPlanning = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "failed")])
    private let excludedCounter = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "excluded")])
    private let recovered = Counter(label: "push_planner_recovered_chunks_total")
    private let alreadyPublished = Counter(label: "push_planner_messages_total", dimensions: [("outcome", "already_published")])

    package init(postgres: PostgresClient, producer: KafkaProducer, reader: KafkaLogReader, catalog: TopicCatalog, settings: PlanningSettings, logger: Logger) {
        self.postgres = postgres
        self.producer = producer
        self.reader = reader
        self.catalog = catalog
        self.settings = settings
        self.logger = logger
    }

    package func run() async throws {
        let interval = Duration.milliseconds(settings.pollIntervalMilliseconds)
        var failures = 0
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                let due = try await dueDeliveries()
                for deliveryId in due {
                    if Task.isCancelled || Task.isShuttingDownGracefully { break }
                    try await planIfFree(deliveryId)
                }
                failures = 0
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                failures += 1
                logger.error("Delivery planning failed; it resumes from its last chunk", metadata: ["error": "\(String(reflecting: error))"])
                try? await Task.sleep(for: min(interval * (1 << min(failures, 5)), .seconds(10)))
                continue
            }
            try? await Task.sleep(for: interval)
        }
    }

    func dueDeliveries() async throws -> [String] {
        let rows = try await postgres.query(
            "SELECT delivery_id FROM push.delivery_plans WHERE status <> 'planned' AND send_at <= now() ORDER BY send_at, delivery_id LIMIT 50",
            logger: logger
        )
        var ids: [String] = []
        for try await id in rows.decode(String.self) { ids.append(id) }
        return ids
    }

    /// Plans the delivery unless another instance holds it.
    func planIfFree(_ deliveryId: String) async throws {
        let logger = self.logger
        try await postgres.withConnection { connection in
            let lock = try await connection.query("SELECT pg_try_advisory_lock(hashtext('push-plan:' || \(deliveryId)))", logger: logger)
            var locked = false
            for try await value in lock.decode(Bool.self) { locked = value }
            guard locked else { return }
            do {
                try await self.plan(deliveryId, on: connection)
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(hashtext('push-plan:' || \(deliveryId)))", logger: logger)
                throw error
            }
            _ = try await connection.query("SELECT pg_advisory_unlock(hashtext('push-plan:' || \(deliveryId)))", logger: logger)
        }
    }

    /// The state of a plan row.
    struct PlanState {
        var delivery: DeliveryAccepted
        var status: String
        var cursor: Cursor
        var targeted: Int
        var excluded: Int
        var failed: Int
        var pending: PendingChunk?
    }

    /// A position in the (app_id, registration_token) order of subscriptions.
    struct Cursor: Codable, Hashable {
        var appId: UUID
        var token: String
        static let start = Cursor(appId: UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), token: "")
    }

    /// The chunk being published: its last subscription, and end offsets of the message topics
    /// taken before any of its records was sent.
    struct PendingChunk: Codable, Hashable {
        var end: Cursor
        var offsets: [String: [Int32: Int64]]
    }

    private func loadPlan(_ deliveryId: String, on connection: PostgresConnection) async throws -> PlanState? {
        let rows = try await connection.query(
            """
            SELECT accepted::text, status, cursor_app, cursor_token, targeted, excluded, failed, pending_chunk::text
            FROM push.delivery_plans WHERE delivery_id = \(deliveryId)
            """,
            logger: logger
        )
        for try await (accepted, status, cursorApp, cursorToken, targeted, excluded, failed, pending)
            in rows.decode((String, String, UUID?, String?, Int64, Int64, Int64, String?).self) {
            let delivery = try EventJSON.decoder.decode(DeliveryAccepted.self, from: Data(accepted.utf8))
            let cursor = cursorApp.map { Cursor(appId: $0, token: cursorToken ?? "") } ?? .start
            let chunk = try pending.map { try JSONDecoder().decode(PendingChunk.self, from: Data($0.utf8)) }
            return PlanState(delivery: delivery, status: status, cursor: cursor, targeted: Int(targeted), excluded: Int(excluded), failed: Int(failed), pending: chunk)
        }
        return nil
    }

    func plan(_ deliveryId: String, on connection: PostgresConnection) async throws {
        guard var state = try await loadPlan(deliveryId, on: connection), state.status != "planned" else { return }
        let delivery = state.delivery
        var logger = self.logger
        logger[metadataKey: "delivery.id"] = .string(deliveryId)
        let apps = try await ServiceCatalog.apps(ids: delivery.apps.map(\.appId), on: connection, logger: logger)
        let factory = try MessageFactory(delivery: delivery, apps: apps)
        let topics = Set(apps.map { $0.platform == .ios ? catalog.apnsMessages.name : catalog.fcmMessages.name }).sorted()

        if state.status == "accepted" {
            let started = DeliveryPlanningStarted(deliveryId: deliveryId, startedAt: Date())
            let record = try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: deliveryId, payload: started, correlationId: delivery.requestId)
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query("UPDATE push.delivery_plans SET status = 'planning', started_at = now(), updated_at = now() WHERE delivery_id = \(deliveryId)", logger: logger)
                try await PlannerOutbox.insert([record], on: connection, logger: logger)
            }
            logger.info("Delivery planning started")
        }

        var limiter = delivery.throttlePerSecond.map { FanOutRateLimiter(perSecond: $0) }
        var mark: (offsets: [String: [Int32: Int64]], at: ContinuousClock.Instant)?
        let markInterval = Duration.milliseconds(settings.recoveryMarkIntervalMilliseconds)
        while true {
            try Task.checkCancellation()
            let rows = try await TargetingQuery.next(
                delivery: delivery, after: state.cursor, through: state.pending?.end, limit: settings.chunkSize,
                withParams: factory.needsParams, on: connection, logger: logger
            )
            if rows.isEmpty && state.pending == nil {
                try await finish(state, on: connection, logger: logger)
                return
            }
            let plannedAt = Date()
            var messages: [PlannedMessage] = []
            var exclusions: [DeliveryExclusionsRecorded.Exclusion] = []
            let platforms = Dictionary(apps.map { ($0.appId, $0.platform) }, uniquingKeysWith: { first, _ in first })
            for row in rows {
                if row.disabled {
                    // The audience is read from `apps`, so every row's app has a platform.
                    guard let platform = platforms[row.appId] else { continue }
                    exclusions.append(.init(appId: row.appId, registrationToken: row.registrationToken, platform: platform, reason: "quarantined: \(row.disabledReason ?? "disabled")"))
                } else if let message = factory.message(for: row, plannedAt: plannedAt) {
                    messages.append(message)
                }
            }
            let end = rows.last.map { Cursor(appId: $0.appId, token: $0.registrationToken) } ?? state.pending!.end

            // Records are built before the chunk is marked, so that the mark is held only
            // while publishing.
            var records = try messages.compactMap { try Self.record(for: $0, catalog: catalog, correlationId: delivery.requestId) }
            if let pending = state.pending {
                let skip = try await publishedMessageIds(deliveryId: deliveryId, since: pending.offsets)
                recovered.increment()
                alreadyPublished.increment(by: skip.count)
                logger.notice("Resuming an interrupted chunk", metadata: ["already.published": "\(skip.count)", "chunk.messages": "\(messages.count)"])
                records.removeAll { record in record.headers.string(Self.messageHeader).flatMap(UUID.init(uuidString:)).map(skip.contains) ?? false }
            } else {
                if mark == nil || ContinuousClock.now - mark!.at > markInterval {
                    var offsets: [String: [Int32: Int64]] = [:]
                    for topic in topics { offsets[topic] = try await reader.endOffsets(topic: topic) }
                    mark = (offsets, .now)
                }
                let pending = PendingChunk(end: end, offsets: mark!.offsets)
                let json = String(decoding: try JSONEncoder().encode(pending), as: UTF8.self)
                try await connection.query("UPDATE push.delivery_plans SET pending_chunk = \(json)::jsonb, updated_at = now() WHERE delivery_id = \(deliveryId)", logger: logger)
                state.pending = pending
            }
            try await publish(records, limiter: &limiter)

            let failures = messages.compactMap { if case .failed(let failure) = $0 { failure } else { nil } }
            var outbox = try failures.map { try PlannerOutbox.record(topic: catalog.messageResults.name, key: $0.message.messageId.uuidString.lowercased(), payload: $0, correlationId: delivery.requestId) }
            if !exclusions.isEmpty {
                outbox.append(try PlannerOutbox.record(
                    topic: catalog.deliveryEvents.name, key: deliveryId,
                    payload: DeliveryExclusionsRecorded(deliveryId: deliveryId, exclusions: exclusions, excludedAt: plannedAt), correlationId: delivery.requestId
                ))
            }
            let (targeted, excluded, failed) = (messages.count, exclusions.count, failures.count)
            try await connection.withTransaction(logger: logger) { connection in
                try await connection.query(
                    """
                    UPDATE push.delivery_plans SET cursor_app = \(end.appId), cursor_token = \(end.token), pending_chunk = NULL,
                        targeted = targeted + \(targeted), excluded = excluded + \(excluded), failed = failed + \(failed), updated_at = now()
                    WHERE delivery_id = \(deliveryId)
                    """,
                    logger: logger
                )
                try await PlannerOutbox.insert(outbox, on: connection, logger: logger)
            }
            state.cursor = end
            state.pending = nil
            state.targeted += targeted
            state.excluded += excluded
            state.failed += failed
            published.increment(by: records.count)
            failedAtPlanning.increment(by: failed)
            excludedCounter.increment(by: excluded)
        }
    }

    private func finish(_ state: PlanState, on connection: PostgresConnection, logger: Logger) async throws {
        let deliveryId = state.delivery.deliveryId
        let planned = DeliveryPlanned(deliveryId: deliveryId, targeted: state.targeted, excluded: state.excluded, failed: state.failed, plannedAt: Date())
        let record = try PlannerOutbox.record(topic: catalog.deliveryEvents.name, key: deliveryId, payload: planned, correlationId: state.delivery.requestId)
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query("UPDATE push.delivery_plans SET status = 'planned', planned_at = now(), updated_at = now() WHERE delivery_id = \(deliveryId)", logger: logger)
            try await PlannerOutbox.insert([record], on: connection, logger: logger)
        }
        logger.info("Delivery planned", metadata: ["targeted": "\(state.targeted)", "excluded": "\(state.excluded)", "failed": "\(state.failed)"])
    }

    /// Sends the records (paced when the delivery is throttled) and returns once the broker
    /// stored all of them; throws if any was not stored (the chunk is then resumed).
    private func publish(_ records: [KafkaProducerRecord], limiter: inout FanOutRateLimiter?) async throws {
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

    /// Ids of this delivery's messages stored on the message topics since the mark.
    private func publishedMessageIds(deliveryId: String, since offsets: [String: [Int32: Int64]]) async throws -> Set<UUID> {
        let found = Mutex<Set<UUID>>([])
        for (topic, start) in offsets {
            try await reader.read(topic: topic, from: start) { records in
                let ids = records.compactMap { record -> UUID? in
                    guard record.headers.string(Self.deliveryHeader) == deliveryId else { return nil }
                    return record.headers.string(Self.messageHeader).flatMap(UUID.init(uuidString:))
                }
                found.withLock { $0.formUnion(ids) }
            }
        }
        return found.withLock { $0 }
    }

    /// Headers on every message record, so that a reader can filter without parsing values.
    package static let deliveryHeader = "push-delivery-id"
    package static let messageHeader = "push-message-id"

    static func record(for message: PlannedMessage, catalog: TopicCatalog, correlationId: String) throws -> KafkaProducerRecord? {
        var record: KafkaProducerRecord
        let deliveryId: String
        switch message {
        case .apns(let apns):
            deliveryId = apns.deliveryId
            record = try KafkaProducerRecord(topic: catalog.apnsMessages.name, event: EventEnvelope(
                key: SubscriptionRegistered.key(appId: apns.appId, registrationToken: apns.registrationToken), payload: apns, correlationId: correlationId
            ))
        case .fcm(let fcm):
            deliveryId = fcm.deliveryId
            record = try KafkaProducerRecord(topic: catalog.fcmMessages.name, event: EventEnvelope(
                key: SubscriptionRegistered.key(appId: fcm.appId, registrationToken: fcm.registrationToken), payload: fcm, correlationId: correlationId
            ))
        case .failed:
            return nil
        }
        record.headers.append(KafkaHeader(name: deliveryHeader, string: deliveryId))
        record.headers.append(KafkaHeader(name: messageHeader, string: message.messageId.uuidString.lowercased()))
        return record
    }
}
