import Foundation
import Logging
import PostgresNIO
import PushEvents

/// Reads a delivery's audience from `push.subscriptions` in (app_id, registration_token) order,
/// one chunk at a time after a cursor (keyset pagination on the primary key: memory stays
/// bounded by the chunk, whatever the audience size). Disabled (quarantined) and unsubscribed
/// subscriptions are returned too, flagged with their exclusion reason, so that they can be
/// written to the exclusion log; unsubscribed wins over quarantined. A shard of a delivery is a
/// range of this order: `end` bounds the page to it.
enum TargetingQuery {
    static func next(
        delivery: DeliveryAccepted, after cursor: DeliveryFanOut.Cursor, through end: DeliveryFanOut.Cursor?,
        limit: Int, withParams: Bool, on connection: PostgresConnection, logger: Logger
    ) async throws -> [TargetedSubscription] {
        let filter = try AudienceFilter(delivery)
        // Bounds: strictly after the cursor, and up to `end` (the recorded end of an interrupted
        // chunk, or the last key of the shard), at most `limit` rows.
        let endApp = end?.appId ?? UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255))
        let bounded = end != nil
        let endToken = end?.token ?? ""
        let rowLimit = limit
        let rows = try await connection.query(
            """
            SELECT app_id, registration_token, user_key, CASE WHEN \(withParams) THEN params::text ELSE '{}' END,
                   disabled OR unsubscribed_at IS NOT NULL,
                   CASE WHEN unsubscribed_at IS NOT NULL THEN 'unsubscribed' ELSE 'quarantined: ' || coalesce(disabled_reason, 'disabled') END
            FROM push.subscriptions
            WHERE app_id = ANY(\(filter.apps))
              AND (app_id, registration_token) > (\(cursor.appId), \(cursor.token))
              AND (NOT \(bounded) OR (app_id, registration_token) <= (\(endApp), \(endToken)))
              AND CASE WHEN \(filter.isProof) THEN user_key = ANY(\(filter.proofUserKeys)) OR registration_token = ANY(\(filter.proofTokens))
                  ELSE (NOT \(filter.byUserKey) OR user_key = ANY(\(filter.userKeys))) AND params @> \(filter.conditions)::jsonb END
            ORDER BY app_id, registration_token
            LIMIT \(rowLimit)
            """,
            logger: logger
        )
        var result: [TargetedSubscription] = []
        result.reserveCapacity(min(rowLimit, 10_000))
        let decoder = JSONDecoder()
        for try await (appId, token, userKey, params, disabled, reason) in rows.decode((UUID, String, String, String, Bool, String?).self) {
            let values = withParams ? ((try? decoder.decode([String: String].self, from: Data(params.utf8))) ?? [:]) : [:]
            result.append(
                TargetedSubscription(
                    appId: appId, registrationToken: token, userKey: userKey, params: values, disabled: disabled, exclusionReason: disabled ? reason : nil))
        }
        return result
    }
}
