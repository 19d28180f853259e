import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// Erasing a person, or an anonymous device, from a service (docs/architecture.md, "Erasure";
/// runbook in docs/operations.md, "Data protection"). In one PostgreSQL transaction: the data
/// keys that sealed their registrations are destroyed (so no copy of `push.subscriptions` can be
/// read back), their devices are recorded in `push.erased_devices` (so a replay of older,
/// unsealed registrations ignores them), and their subscriptions and every `broad_log`,
/// `exclusion_log`, `tracking_log` and `tracking_firsts` row of their devices are deleted, also
/// of the devices whose subscription is already gone (purged, or of a deleted app), found in
/// `push.subject_devices` (for an anonymous device erased by its token, through its own key,
/// found by the token's digest). The
/// delivery indicators are counters and keep their counts. Then a `PersonErased` audit event,
/// which names nobody, is published.
package struct PersonErasure: Sendable {
    let producer: KafkaProducer
    /// `push.subscriptions`, where the audit event goes.
    let topic: String
    let postgres: PostgresClient
    let logger: Logger

    package init(producer: KafkaProducer, topic: String, postgres: PostgresClient, logger: Logger) {
        self.producer = producer
        self.topic = topic
        self.postgres = postgres
        self.logger = logger
    }

    /// The answer (200): what was removed, as counts.
    package struct Erased: Codable, Sendable, Equatable {
        package var erasureId: UUID
        package var subscriptions: Int
        package var dataKeys: Int
        package var broadLogRows: Int
        package var exclusionLogRows: Int
        package var trackingLogRows: Int
        /// Deliveries not planned yet whose audience (`userKeys`) or proof named the person or
        /// one of their devices: the name is taken out of the planner's state.
        package var deliveryPlans: Int
    }

    /// Erases the person `userKey` (every device of theirs in the service, and their data key),
    /// or the device `token` when it has no user key (409 when it has one: erasing a device
    /// would leave its registrations readable under its person's key; erase the person). 404
    /// for an unknown service, or when the service has nothing of them.
    package func erase(serviceName: String, userKey: String?, token: String?) async throws -> Erased {
        guard (userKey == nil) != (token == nil) else { throw AdminError.badRequest("give exactly one of userKey and registrationToken") }
        if let userKey, userKey.isEmpty { throw AdminError.badRequest("userKey must not be empty") }
        if let token, token.isEmpty { throw AdminError.badRequest("registrationToken must not be empty") }
        let services = try await postgres.query("SELECT service_id FROM push.services WHERE name = \(serviceName)", logger: logger)
        var found: UUID?
        for try await id in services.decode(UUID.self) { found = id }
        guard let serviceId = found else { throw AdminError.notFound("no service named \(serviceName)") }
        let erasureId = UUID()
        let erasedAt = Date()
        let erased: Erased
        do {
            erased = try await transaction(
                serviceId: serviceId, serviceName: serviceName, userKey: userKey, token: token, erasureId: erasureId, erasedAt: erasedAt)
        } catch let error as PostgresTransactionError {
            // A refusal decided inside the transaction (404, 409) is the answer, not a failure.
            if let refusal = error.closureError as? AdminError { throw refusal }
            throw error
        }
        let audit = PersonErased(
            erasureId: erasureId, serviceId: serviceId, subjectKind: userKey != nil ? "user" : "device", subscriptions: erased.subscriptions,
            dataKeys: erased.dataKeys, broadLogRows: erased.broadLogRows, exclusionLogRows: erased.exclusionLogRows,
            trackingLogRows: erased.trackingLogRows, erasedAt: erasedAt)
        do {
            _ = try await producer.send(try KafkaProducerRecord(topic: topic, event: EventEnvelope(key: "erasure:\(erasureId)", payload: audit)))
        } catch {
            logger.error("Erasure done but its audit event was not stored", metadata: ["erasure": "\(erasureId)", "error": "\(error)"])
            throw AdminError(
                status: 503, reason: "erasure \(erasureId) is done, but the broker did not store its audit event (\(error)); record it by hand")
        }
        logger.notice("Erasure", metadata: ["erasure": "\(erasureId)", "service": "\(serviceName)", "subscriptions": "\(erased.subscriptions)"])
        return erased
    }

    /// The PostgreSQL part, in one transaction: keys, erased devices, log rows, subscriptions.
    private func transaction(serviceId: UUID, serviceName: String, userKey: String?, token: String?, erasureId: UUID, erasedAt: Date) async throws -> Erased {
        try await postgres.withTransaction(logger: logger) { connection -> Erased in
            // The devices: the person's subscriptions, or the token's in the service's apps.
            let rows = try await connection.query(
                """
                SELECT s.app_id, s.registration_token, s.token_digest, s.user_key
                FROM push.subscriptions s JOIN push.apps a USING (app_id)
                WHERE a.service_id = \(serviceId)
                  AND (\(userKey)::text IS NULL OR s.user_key = \(userKey)) AND (\(token)::text IS NULL OR s.registration_token = \(token))
                FOR UPDATE OF s
                """,
                logger: logger)
            var apps: [UUID] = []
            var tokens: [String] = []
            var digests: [String] = []
            for try await (app, registrationToken, digest, owner) in rows.decode((UUID, String, String, String).self) {
                if token != nil, !owner.isEmpty {
                    throw AdminError(status: 409, reason: "this device belongs to a user key: erase the person by userKey")
                }
                apps.append(app)
                tokens.append(registrationToken)
                digests.append(digest)
            }
            var subjects = zip(apps, digests).map { PersonalDataKeys.subject(userKey: "", appId: $0, tokenDigest: $1) }
            if let userKey { subjects.append(PersonalDataKeys.subject(userKey: userKey, appId: UUID(), tokenDigest: "")) }
            // An anonymous device whose subscription is gone: its own key, found by the digest.
            if let token, apps.isEmpty {
                subjects += try await SubjectKeys.deviceSubjects(serviceId: serviceId, tokenDigest: TokenDigest.of(token), on: connection, logger: logger)
            }
            let keyIds = try await SubjectKeys.delete(serviceId: serviceId, subjects: subjects, on: connection, logger: logger)
            let keys = keyIds.count
            let plans = try await scrubDeliveryPlans(serviceId: serviceId, userKey: userKey, tokens: tokens, on: connection)
            // Their devices whose subscription is gone (purged from quarantine, or of a deleted
            // app) still have log rows: the subjects' devices, unless another person's (or an
            // anonymous) registration holds the device now.
            var deviceApps = apps
            var deviceDigests = digests
            var known = Set(zip(apps, digests).map { "\($0):\($1)" })
            for try await (app, digest) in try await connection.query(
                """
                SELECT d.app_id, d.token_digest FROM push.subject_devices d
                WHERE d.subject_id = ANY(\(keyIds))
                  AND NOT EXISTS (
                      SELECT 1 FROM push.subscriptions s
                      WHERE s.app_id = d.app_id AND s.token_digest = d.token_digest AND s.user_key <> \(userKey ?? ""))
                """,
                logger: logger
            ).decode((UUID, String).self) {
                guard known.insert("\(app):\(digest)").inserted else { continue }
                deviceApps.append(app)
                deviceDigests.append(digest)
            }
            try await connection.query("DELETE FROM push.subject_devices WHERE subject_id = ANY(\(keyIds))", logger: logger)
            guard !apps.isEmpty || keys > 0 || plans > 0 else {
                throw AdminError.notFound(
                    userKey != nil
                        ? "nothing of this userKey in service \(serviceName)" : "no subscription with this registrationToken in service \(serviceName)")
            }
            try await connection.query(
                """
                INSERT INTO push.erased_devices (app_id, token_digest, erased_at)
                SELECT a, d, \(erasedAt) FROM unnest(\(deviceApps)::uuid[], \(deviceDigests)::text[]) AS x(a, d)
                ON CONFLICT (app_id, token_digest) DO UPDATE SET erased_at = excluded.erased_at
                """,
                logger: logger)
            // Tracking rows first: they are found through the broad log's messages.
            let tracking = try await count(
                """
                WITH m AS (
                    SELECT delivery_id, message_id::text AS message_id, broad_log_id FROM push.broad_log
                    WHERE (app_id, token_digest) IN (SELECT * FROM unnest(\(deviceApps)::uuid[], \(deviceDigests)::text[]))),
                f AS (
                    DELETE FROM push.tracking_firsts t USING m
                    WHERE t.delivery_id = m.delivery_id AND (t.message_id = m.message_id OR t.message_id = m.broad_log_id::text)),
                d AS (
                    DELETE FROM push.tracking_log t USING m
                    WHERE t.delivery_id = m.delivery_id AND (t.message_id = m.message_id OR t.broad_log_id = m.broad_log_id)
                    RETURNING 1)
                SELECT count(*)::int FROM d
                """,
                on: connection)
            let broadLog = try await count(
                """
                WITH d AS (DELETE FROM push.broad_log WHERE (app_id, token_digest) IN (SELECT * FROM unnest(\(deviceApps)::uuid[], \(deviceDigests)::text[])) RETURNING 1)
                SELECT count(*)::int FROM d
                """,
                on: connection)
            let exclusions = try await count(
                """
                WITH d AS (
                    DELETE FROM push.exclusion_log
                    WHERE (app_id, token_digest) IN (SELECT * FROM unnest(\(deviceApps)::uuid[], \(deviceDigests)::text[]))
                    RETURNING 1)
                SELECT count(*)::int FROM d
                """,
                on: connection)
            try await connection.query(
                "DELETE FROM push.subscriptions WHERE (app_id, registration_token) IN (SELECT * FROM unnest(\(apps)::uuid[], \(tokens)::text[]))",
                logger: logger)
            return Erased(
                erasureId: erasureId, subscriptions: apps.count, dataKeys: keys, broadLogRows: broadLog, exclusionLogRows: exclusions,
                trackingLogRows: tracking, deliveryPlans: plans)
        }
    }

    /// Takes the user key out of the `userKeys` audiences and proofs, and the devices' tokens out
    /// of the proofs, of the service's deliveries that still hold recipients
    /// (`push.delivery_plans.accepted`; a planned delivery keeps only counts, and
    /// `push.deliveries` and `DeliveryAccepted` version 2 never held more). A list left empty
    /// targets nobody. Returns how many plans named them.
    private func scrubDeliveryPlans(serviceId: UUID, userKey: String?, tokens: [String], on connection: PostgresConnection) async throws -> Int {
        // (the list's path in the plan, the names to take out of it)
        var lists: [(path: String, names: [String])] = []
        if let userKey { lists += [("{audience,userKeys}", [userKey]), ("{proof,userKeys}", [userKey])] }
        if !tokens.isEmpty { lists.append(("{proof,registrationTokens}", tokens)) }
        var plans: Set<String> = []
        for (path, names) in lists {
            let rows = try await connection.query(
                """
                UPDATE push.delivery_plans
                SET accepted = jsonb_set(accepted, \(path)::text[], (accepted #> \(path)::text[]) - \(names)::text[]), updated_at = now()
                WHERE status <> 'planned' AND (accepted->>'serviceId')::uuid = \(serviceId) AND (accepted #> \(path)::text[]) ?| \(names)::text[]
                RETURNING delivery_id
                """,
                logger: logger)
            for try await id in rows.decode(String.self) { plans.insert(id) }
        }
        return plans.count
    }

    private func count(_ query: PostgresQuery, on connection: PostgresConnection) async throws -> Int {
        var result = 0
        for try await value in try await connection.query(query, logger: logger).decode(Int.self) { result = value }
        return result
    }
}
