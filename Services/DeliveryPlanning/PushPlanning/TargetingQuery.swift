import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushStore
import PushWire

/// Reads a delivery's audience from `push.subscriptions` in (app_id, registration_token) order,
/// one chunk at a time after a cursor (keyset pagination on the primary key: memory stays
/// bounded by the chunk, whatever the audience size). Disabled (quarantined) and unsubscribed
/// subscriptions are returned too, flagged with their exclusion reason, so that they can be
/// written to the exclusion log; unsubscribed wins over quarantined. A shard of a delivery is a
/// range of this order: `end` bounds the page to it.
enum TargetingQuery {
    static func next(
        delivery: DeliveryAccepted, after cursor: DeliveryFanOut.Cursor, through end: DeliveryFanOut.Cursor?,
        limit: Int, withParams: Bool, withLanguage: Bool = false, dataKeys: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [TargetedSubscription] {
        let filter = try AudienceQuery(delivery)
        // Bounds: strictly after the cursor, and up to `end` (the recorded end of an interrupted
        // chunk, or the last key of the shard), at most `limit` rows: one app's range at a time,
        // in the primary key's order (a UUID's text sorts as its bytes do).
        //
        // Per app, because PostgreSQL (15, 16) does not start an index scan at a row comparison
        // `(app_id, registration_token) > (a, t)` when `app_id = ANY(...)` is also given, nor stop
        // at `(app_id, registration_token) <= (a, t)`: each page then walked the app's index from
        // its first entry to the cursor and on to its last (docs/benchmarks.md, "The targeting
        // page"). `app_id = $1 AND registration_token > $2 AND registration_token <= $3` starts
        // and stops where it should.
        let key = { (app: UUID) in app.uuidString }
        var result: [TargetedSubscription] = []
        for app in filter.apps.sorted(by: { key($0) < key($1) }) where key(app) >= key(cursor.appId) {
            if let end, key(app) > key(end.appId) { break }
            let remaining = limit - result.count
            guard remaining > 0 else { break }
            result += try await page(
                of: app, after: app == cursor.appId ? cursor.token : "", through: app == end?.appId ? end?.token : nil,
                limit: remaining, filter: filter, withParams: withParams, withLanguage: withLanguage, serviceId: delivery.serviceId, dataKeys: dataKeys,
                on: connection, logger: logger)
        }
        return try await withKeys(result, serviceId: delivery.serviceId, dataKeys: dataKeys, on: connection, logger: logger)
    }

    /// The page with a data key for every enabled device: those registered before data keys
    /// existed (or inserted by other means) get theirs created here, committed before any message
    /// is sealed under it.
    private static func withKeys(
        _ rows: [TargetedSubscription], serviceId: UUID, dataKeys: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [TargetedSubscription] {
        func subject(_ row: TargetedSubscription) -> String {
            SubjectKeys.subject(userKey: row.userKey, appId: row.appId, tokenDigest: TokenDigest.of(row.registrationToken))
        }
        var rows = rows
        for _ in 0..<2 {
            let missing = rows.indices.filter { !rows[$0].disabled && rows[$0].subjectKey == nil }
            guard !missing.isEmpty else { return rows }
            let subjects = missing.map { subject(rows[$0]) }
            let keys = try await SubjectKeys.create(
                serviceId: serviceId, subjects: Array(Set(subjects)), wrapping: dataKeys, on: connection, logger: logger)
            for (index, subject) in zip(missing, subjects) {
                rows[index].subjectKey = keys[subject].map { TargetedSubscription.SubjectKey(id: $0.id, key: $0.key) }
            }
        }
        // A key another transaction was creating at that moment, twice: the chunk is planned again.
        guard rows.allSatisfy({ $0.disabled || $0.subjectKey != nil }) else { throw DeliveryFanOut.SubjectKeyMissing() }
        return rows
    }

    /// Up to `limit` subscriptions of one app with a token after `after` and (when given) up to
    /// `through`, in token order. Every token is non-empty, so `after: ""` is the app's start.
    private static func page(
        of app: UUID, after: String, through: String?, limit: Int, filter: AudienceQuery, withParams: Bool, withLanguage: Bool, serviceId: UUID,
        dataKeys: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [TargetedSubscription] {
        let rows = try await connection.query(
            """
            SELECT app_id, registration_token, user_key, CASE WHEN \(withParams) THEN params::text ELSE '{}' END,
                   disabled OR unsubscribed_at IS NOT NULL,
                   CASE WHEN unsubscribed_at IS NOT NULL THEN 'unsubscribed' ELSE 'quarantined: ' || coalesce(disabled_reason, 'disabled') END,
                   -- The data key of an enabled device's subject as one text: its id, the id of
                   -- the key-encryption key that wrapped it (empty: not wrapped), '.', the key.
                   CASE WHEN NOT (disabled OR unsubscribed_at IS NOT NULL) THEN (
                       SELECT k.subject_id::text || coalesce(k.wrap_key_id, '') || '.' || encode(k.data_key, 'hex') FROM push.subject_keys k
                       WHERE k.service_id = \(serviceId) AND k.subject = \(unescaped: SubjectKeys.subjectOfSubscription)) END,
                   CASE WHEN \(withLanguage) THEN coalesce(os_language, '') ELSE '' END
            FROM push.subscriptions s CROSS JOIN (SELECT \(filter.filter.values)::text[] AS v) f
            WHERE app_id = \(app)
              AND registration_token > \(after)
              AND (\(through)::text IS NULL OR registration_token <= \(through))
              AND CASE WHEN \(filter.isProof) THEN user_key = ANY(\(filter.proofUserKeys)) OR registration_token = ANY(\(filter.proofTokens))
                  ELSE (NOT \(filter.byUserKey) OR user_key = ANY(\(filter.userKeys))) AND params @> \(filter.conditions)::jsonb
                       AND \(unescaped: filter.filter.condition) END
            ORDER BY registration_token
            LIMIT \(limit)
            """,
            logger: logger
        )
        var result: [TargetedSubscription] = []
        result.reserveCapacity(min(limit, 10_000))
        let decoder = JSONDecoder()
        for try await (appId, token, userKey, params, disabled, reason, key, language) in rows.decode(
            (UUID, String, String, String, Bool, String?, String?, String).self)
        {
            // The events' own reader; JSONDecoder only for what it leaves (an escaped key).
            let values =
                withParams ? (EventJSONReader.stringMembers(of: params) ?? (try? decoder.decode([String: String].self, from: Data(params.utf8))) ?? [:]) : [:]
            result.append(
                TargetedSubscription(
                    appId: appId, registrationToken: token, userKey: userKey, params: values, disabled: disabled, exclusionReason: disabled ? reason : nil,
                    subjectKey: try key.flatMap { try subjectKey($0, dataKeys: dataKeys) }, osLanguage: language))
        }
        return result
    }

    /// `<subject id><key-encryption key id>.<key in hex>` as the page query gives it, the key
    /// opened when it is wrapped.
    private static func subjectKey(_ text: String, dataKeys: (any DataKeyWrapping)?) throws -> TargetedSubscription.SubjectKey? {
        let utf8 = Array(text.utf8)
        guard utf8.count > 37, let id = UUID(utf8: utf8[..<36]), let dot = utf8[36...].firstIndex(of: UInt8(ascii: ".")) else { return nil }
        let wrapKeyId = dot > 36 ? String(decoding: utf8[36..<dot], as: UTF8.self) : nil
        let bytes = Array(utf8[(dot + 1)...])
        guard bytes.count == (wrapKeyId == nil ? 64 : 120) else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        var key: [UInt8] = []
        key.reserveCapacity(bytes.count / 2)
        var index = 0
        while index < bytes.count {
            guard let high = nibble(bytes[index]), let low = nibble(bytes[index + 1]) else { return nil }
            key.append(high << 4 | low)
            index += 2
        }
        return TargetedSubscription.SubjectKey(id: id, key: try SubjectKeys.opened(key, keyId: wrapKeyId, subjectId: id, wrapping: dataKeys))
    }
}
