import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// Keeps `push.deliveries`, `push.delivery_rejections`, `push.exclusion_log` and
/// `push.delivery_controls` from `push.delivery-events`. Statuses only move forward (accepted →
/// planning → planned; a cancelled delivery stays cancelled), so a repeated event changes
/// nothing. An exclusion of a device erased after it was recorded (`push.erased_devices`) is not
/// logged: a replay does not bring an erased person's `exclusion_log` rows back. Exclusions are
/// keyed by token digest: version 2 names devices only by digest, and its rows take the token
/// from `push.subscriptions` while the device is there (NULL otherwise); version 1 (old history)
/// keeps the token it carries (docs/database.md, `exclusion_log`).
package struct DeliveryProjection: EnvelopeProjection {
    package enum Event: Sendable {
        case accepted(DeliveryAccepted)
        case rejected(DeliveryRejected)
        case started(DeliveryPlanningStarted)
        /// `tokens`: the tokens of a version-1 event, in the order of its exclusions (nil for
        /// version 2, which carries none).
        case exclusions(DeliveryExclusionsRecorded, tokens: [String]?)
        case planned(DeliveryPlanned)
        /// Cancelled, paused or resumed by an operator: the new state of `delivery_controls`.
        case control(deliveryId: String, state: String, at: Date, eventId: UUID)
    }

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<Event>

    package init(name: String = "push-deliveries-projection", topic: String) {
        self.name = name
        self.topics = [topic]
        var decoder = EventDecoder<Event>()
        // Version 1 named a userKeys audience's and a proof's recipients: counted as version 2 is.
        decoder.register(DeliveryAccepted.self, version: 1) { event, _ in .accepted(event.recipientsCounted) }
        decoder.register(DeliveryAccepted.self) { event, _ in .accepted(event.recipientsCounted) }
        decoder.register(DeliveryRejected.self) { event, _ in .rejected(event) }
        decoder.register(DeliveryPlanningStarted.self) { event, _ in .started(event) }
        decoder.register(DeliveryExclusionsRecorded.self) { event, _ in .exclusions(event, tokens: nil) }
        decoder.register(DeliveryExclusionsRecordedV1.self) { event, _ in .exclusions(event.upcast, tokens: event.exclusions.map(\.registrationToken)) }
        decoder.register(DeliveryPlanned.self) { event, _ in .planned(event) }
        decoder.register(DeliveryCancelled.self) { event, metadata in
            .control(deliveryId: event.deliveryId, state: "cancelled", at: event.cancelledAt, eventId: metadata.id)
        }
        decoder.register(DeliveryPaused.self) { event, metadata in
            .control(deliveryId: event.deliveryId, state: "paused", at: event.pausedAt, eventId: metadata.id)
        }
        decoder.register(DeliveryResumed.self) { event, metadata in
            .control(deliveryId: event.deliveryId, state: "active", at: event.resumedAt, eventId: metadata.id)
        }
        self.decoder = decoder
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        // Delivered on commit: an operator's cancel, pause or resume waits for it
        // (`DeliveryAdmin`), and so does the console before it shows a delivery it submitted.
        if !events.isEmpty { try await ProjectionWait.deliveries.notify(on: connection, logger: logger) }
        var plannedDeliveries: [String: DeliveryPlanned] = [:]
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        encoder.dateEncodingStrategy = .iso8601
        func json<T: Encodable>(_ value: T) throws -> String { String(decoding: try encoder.encode(value), as: UTF8.self) }
        for projected in events {
            switch projected.event {
            case .accepted(let delivery):
                try await connection.query(
                    """
                    INSERT INTO push.deliveries (delivery_id, request_id, service_id, service_name, status, apps, audience, content,
                                                 throttle_per_second, valid_until, send_at, accepted_at, proof, template_name, template_version,
                                                 priority)
                    VALUES (\(delivery.deliveryId), \(delivery.requestId), \(delivery.serviceId), \(delivery.serviceName), 'accepted',
                            \(try json(delivery.apps))::jsonb, \(try json(delivery.audience))::jsonb, \(try json(delivery.content))::jsonb,
                            \(delivery.throttlePerSecond), \(delivery.validUntil), \(delivery.sendAt), \(delivery.acceptedAt), \(delivery.proof != nil),
                            \(delivery.template?.name), \(delivery.template?.version), \(delivery.lane.rawValue))
                    ON CONFLICT (delivery_id) DO NOTHING
                    """,
                    logger: logger
                )
                // A database rebuilt by replay starts push.delivery_ids at 1: move it past every
                // replayed id, so a new delivery never takes the id of one still on the topics
                // (whose controls, results and hits would then apply to it). A no-op live.
                if let replayedId = Int32(delivery.deliveryId), replayedId > 0 {
                    try await connection.query(
                        """
                        SELECT setval('push.delivery_ids', \(replayedId)) FROM push.delivery_ids
                        WHERE (CASE WHEN is_called THEN last_value ELSE last_value - 1 END) < \(replayedId)
                        """,
                        logger: logger
                    )
                }
            case .control(let deliveryId, let state, let at, let eventId):
                // Each change takes a new version (readers ask for what changed since theirs);
                // a repeated event changes nothing, and nothing brings a cancelled delivery back.
                try await connection.query(
                    """
                    INSERT INTO push.delivery_controls AS c (delivery_id, state, changed_at, event_id)
                    VALUES (\(deliveryId), \(state), \(at), \(eventId))
                    ON CONFLICT (delivery_id) DO UPDATE SET state = excluded.state, changed_at = excluded.changed_at, event_id = excluded.event_id,
                        version = nextval('push.delivery_control_versions')
                    WHERE c.state <> 'cancelled' AND c.event_id <> excluded.event_id
                    """,
                    logger: logger
                )
            case .rejected(let rejection):
                try await connection.query(
                    """
                    INSERT INTO push.delivery_rejections (request_id, reason, source_topic, source_partition, source_offset, rejected_at)
                    VALUES (\(rejection.requestId), \(rejection.reason), \(rejection.sourceTopic), \(rejection.sourcePartition), \(rejection.sourceOffset), \(rejection.rejectedAt))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
            case .started(let started):
                try await connection.query(
                    """
                    UPDATE push.deliveries SET status = 'planning', planning_started_at = coalesce(planning_started_at, \(started.startedAt)), updated_at = now()
                    WHERE delivery_id = \(started.deliveryId) AND status = 'accepted'
                    """,
                    logger: logger
                )
            case .exclusions(let recorded, let tokens):
                let apps = recorded.exclusions.map(\.appId)
                let digests = recorded.exclusions.map(\.tokenDigest)
                // '' for "not in the event": a registration token is never empty.
                let tokens = tokens ?? Array(repeating: "", count: recorded.exclusions.count)
                let platforms = recorded.exclusions.map(\.platform.rawValue)
                let reasons = recorded.exclusions.map(\.reason)
                try await connection.query(
                    """
                    INSERT INTO push.exclusion_log (delivery_id, app_id, token_digest, registration_token, platform, reason, excluded_at, log_month)
                    SELECT \(recorded.deliveryId), a, d,
                           coalesce(nullif(t, ''), (SELECT s.registration_token FROM push.subscriptions s WHERE s.app_id = x.a AND s.token_digest = x.d LIMIT 1)),
                           p, r, \(recorded.excludedAt),
                           date_trunc('month', coalesce((SELECT send_at FROM push.deliveries WHERE delivery_id = \(recorded.deliveryId)),
                                                        \(recorded.excludedAt)) AT TIME ZONE 'UTC')::date
                    FROM unnest(\(apps)::uuid[], \(digests)::text[], \(tokens)::text[], \(platforms)::text[], \(reasons)::text[]) AS x(a, d, t, p, r)
                    WHERE NOT EXISTS (
                        SELECT 1 FROM push.erased_devices e
                        WHERE e.app_id = x.a AND e.token_digest = x.d AND \(recorded.excludedAt) <= e.erased_at)
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
            case .planned(let planned):
                plannedDeliveries[planned.deliveryId] = planned
                try await connection.query(
                    """
                    UPDATE push.deliveries SET status = 'planned', targeted = \(planned.targeted), excluded = \(planned.excluded),
                        failed_at_planning = \(planned.failed), planned_at = \(planned.plannedAt), updated_at = now()
                    WHERE delivery_id = \(planned.deliveryId)
                    """,
                    logger: logger
                )
            }
        }
        // The planned sizes of the indicators, set (not added: a replayed event changes nothing),
        // in key order like every writer of the counters.
        if !plannedDeliveries.isEmpty {
            let rows = plannedDeliveries.values.sorted { $0.deliveryId < $1.deliveryId }
            try await connection.query(
                """
                INSERT INTO push.delivery_indicator_counts AS c (delivery_id, to_deliver, excluded, updated_at)
                SELECT d, t, e, now() FROM unnest(\(rows.map(\.deliveryId))::text[], \(rows.map(\.targeted))::bigint[], \(rows.map(\.excluded))::bigint[]) AS x(d, t, e)
                ORDER BY d
                ON CONFLICT (delivery_id) DO UPDATE SET to_deliver = excluded.to_deliver, excluded = excluded.excluded, updated_at = excluded.updated_at
                """,
                logger: logger
            )
        }
    }
}
