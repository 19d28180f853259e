import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

extension DeliveryAdmin {
    /// A dry run of a request (`POST /admin/v1/deliveries/preview`): what the delivery would
    /// target and send if it were submitted now. Nothing is published or written.
    package struct Preview: Codable, Sendable, Equatable {
        package var requestId: String
        /// A proof: only the proof's recipients are counted and sampled.
        package var proof: Bool
        /// Devices that would get a message (enabled subscriptions the audience matches).
        package var targeted: Int
        /// Devices the audience matches that would be left out, and logged in `exclusion_log`.
        package var excluded: Int
        package var apps: [AppAudience]
        /// Exclusions by reason (`quarantined: <provider reason>`, `unsubscribed`), largest first.
        package var exclusions: [ExclusionCount]
        /// For an audience of userKeys (or a proof's userKeys): how many of them match no
        /// subscription of the targeted apps. Null for the other audiences.
        package var unmatchedUserKeys: Int?
        /// The first devices of each app (by token) with the message built for them.
        package var samples: [Sample]
        /// With `content.languages`: the targeted devices per language texts they would get,
        /// the default texts as `language` null; absent otherwise.
        package var languages: [LanguageCount]?
        /// With `content.variants`: each variant, in the request's order, with its share and
        /// the devices it would get (the targeted devices times the share, in whole devices that
        /// add up to the targeted ones: each device's
        /// variant follows from its message id, which includes the delivery id given at
        /// submission, so the delivery's own split differs from this by chance); absent otherwise.
        package var variants: [VariantCount]?
    }

    package struct VariantCount: Codable, Sendable, Equatable {
        package var variant: String
        package var share: Int
        package var devices: Int
    }

    package struct LanguageCount: Codable, Sendable, Equatable {
        /// The tag of `content.languages` as the request wrote it; null for the default texts.
        package var language: String?
        package var devices: Int
    }

    package struct AppAudience: Codable, Sendable, Equatable {
        package var appId: UUID
        package var integrationKey: String
        package var platform: Platform
        package var targeted: Int
        package var excluded: Int
    }

    package struct ExclusionCount: Codable, Sendable, Equatable {
        package var reason: String
        package var devices: Int
    }

    package struct Sample: Codable, Sendable, Equatable {
        package var appId: UUID
        package var platform: Platform
        package var userKey: String
        package var registrationToken: String
        /// `send`, or `failed` when the message would end failed at planning (`failureReason`:
        /// `payload-too-large`, `reserved-key`).
        package var outcome: String
        package var failureReason: String?
        /// The JSON sent to the provider: the APNs payload, or FCM's `message` object. `_dId`
        /// and `_mId` are "0" here (ids are given when the delivery is accepted and planned).
        package var payload: String?
        /// The payload's size in bytes, what counts against the 4096-byte limit: the whole APNs
        /// payload; FCM's `data`, `notification` and `android.notification` objects (0 for a
        /// message refused for a reserved key).
        package var bytes: Int
        /// The tag of `content.languages` whose texts the device gets (null: the default texts).
        package var language: String?
        /// The A/B variant whose texts the device gets (null without variants).
        package var variant: String?
    }

    /// Most samples per app a preview may ask for.
    package static let maximumSamplesPerApp = 20

    package func preview(_ document: [UInt8], samplesPerApp: Int = 3) async throws -> Preview {
        guard (0...Self.maximumSamplesPerApp).contains(samplesPerApp) else {
            throw AdminError.badRequest("samples must be between 0 and \(Self.maximumSamplesPerApp)")
        }
        let request = try Self.parse(document)
        return try await postgres.withConnection { connection in
            let (delivery, service) = try await validate(request, on: connection)
            let apps = delivery.apps.compactMap { reference in service.apps.first { $0.appId == reference.appId } }
            let counts = try await audienceCounts(delivery, on: connection)
            var audiences: [AppAudience] = []
            var exclusions: [String: Int] = [:]
            for app in apps {
                let ofApp = counts.filter { $0.appId == app.appId }
                let excluded = ofApp.filter(\.disabled)
                for row in excluded { exclusions[row.reason ?? "quarantined: disabled", default: 0] += row.devices }
                audiences.append(
                    AppAudience(
                        appId: app.appId, integrationKey: app.integrationKey, platform: app.platform,
                        targeted: ofApp.filter { !$0.disabled }.reduce(0) { $0 + $1.devices }, excluded: excluded.reduce(0) { $0 + $1.devices }))
            }
            let factory = try MessageFactory(delivery: delivery, apps: apps)
            var samples: [Sample] = []
            for app in apps where samplesPerApp > 0 {
                for subscription in try await firstSubscriptions(delivery, app: app.appId, limit: samplesPerApp, on: connection) {
                    let messageId = factory.messageId(for: subscription)
                    if let built = factory.built(for: subscription, messageId: messageId, broadLogId: 0, plannedAt: delivery.acceptedAt) {
                        var sample = Self.sample(built.message, bytes: built.contentBytes, subscription: subscription, platform: app.platform)
                        sample.language = factory.language(for: subscription, messageId: messageId)
                        sample.variant = factory.variant(forMessage: messageId)
                        samples.append(sample)
                    }
                }
            }
            return Preview(
                requestId: request.requestId,
                proof: delivery.proof != nil,
                targeted: audiences.reduce(0) { $0 + $1.targeted },
                excluded: audiences.reduce(0) { $0 + $1.excluded },
                apps: audiences,
                exclusions: exclusions.map { ExclusionCount(reason: $0.key, devices: $0.value) }.sorted { ($1.devices, $0.reason) < ($0.devices, $1.reason) },
                unmatchedUserKeys: try await unmatchedUserKeys(delivery, on: connection),
                samples: samples,
                languages: factory.needsLanguage && factory.variants.isEmpty ? Self.languageCounts(counts.filter { !$0.disabled }, factory.languages) : nil,
                variants: delivery.content.variants.map { Self.variantCounts($0, targeted: audiences.reduce(0) { $0 + $1.targeted }) }
            )
        }
    }

    private static func sample(_ message: PlannedMessage, bytes: Int, subscription: TargetedSubscription, platform: Platform) -> Sample {
        var sample = Sample(
            appId: subscription.appId, platform: platform, userKey: subscription.userKey, registrationToken: subscription.registrationToken, outcome: "send",
            bytes: bytes)
        switch message {
        case .apns(let apns): sample.payload = apns.payload
        case .fcm(let fcm): sample.payload = fcm.message
        case .failed(let failure):
            sample.outcome = "failed"
            sample.failureReason = failure.reason
        }
        return sample
    }

    private struct CountRow {
        var appId: UUID
        var disabled: Bool
        var reason: String?
        /// The device's `osLanguage` as `ContentLanguages` compares it ("" when not read).
        var language: String
        var devices: Int
    }

    /// The devices each variant would get: `targeted` times its share, whole devices adding up to
    /// `targeted` (each rounded down, the devices left over to the largest remainders, the
    /// request's order among equals).
    static func variantCounts(_ variants: [DeliveryRequest.Variant], targeted: Int) -> [VariantCount] {
        var counts = variants.map { VariantCount(variant: $0.name, share: $0.share, devices: targeted * $0.share / 100) }
        let left = targeted - counts.reduce(0) { $0 + $1.devices }
        let byRemainder = variants.indices.sorted { (targeted * variants[$1].share % 100, $0) < (targeted * variants[$0].share % 100, $1) }
        for index in byRemainder.prefix(max(left, 0)) { counts[index].devices += 1 }
        return counts
    }

    /// Devices per language texts, the most first (then by tag, the default last among equals).
    private static func languageCounts(_ rows: [CountRow], _ languages: ContentLanguages) -> [LanguageCount] {
        var devices: [String?: Int] = [:]
        for row in rows { devices[languages.tag(forDevice: row.language), default: 0] += row.devices }
        return devices.map { LanguageCount(language: $0.key, devices: $0.value) }.sorted {
            ($1.devices, $0.language ?? "\u{10FFFF}") < ($0.devices, $1.language ?? "\u{10FFFF}")
        }
    }

    /// The audience's subscriptions per app, enabled or not (and why not). With the service's
    /// frequency cap (a bulk delivery to its audience), an enabled device whose person already
    /// got the cap's number of bulk deliveries in the period counts as excluded, reason
    /// `frequency-cap`, as the fan-out would leave it out now.
    private func audienceCounts(_ delivery: DeliveryAccepted, on connection: PostgresConnection) async throws -> [CountRow] {
        let filter = try AudienceQuery(delivery)
        let cap =
            delivery.lane == .bulk && delivery.proof == nil
            ? try await ServiceCatalog.frequencyCap(serviceId: delivery.serviceId, on: connection, logger: logger) : nil
        let rows = try await connection.query(
            """
            SELECT app_id, disabled OR unsubscribed_at IS NOT NULL OR capped,
                   CASE WHEN unsubscribed_at IS NOT NULL THEN 'unsubscribed'
                        WHEN disabled THEN 'quarantined: ' || coalesce(disabled_reason, 'disabled')
                        WHEN capped THEN 'frequency-cap' END,
                   CASE WHEN \(delivery.content.languages != nil && delivery.content.variants == nil) THEN lower(replace(coalesce(os_language, ''), '_', '-')) ELSE '' END,
                   count(*)
            FROM push.subscriptions s CROSS JOIN (SELECT \(filter.filter.values)::text[] AS v) f
            CROSS JOIN LATERAL (
                SELECT \(cap != nil) AND (
                    SELECT count(*) FROM push.subject_keys k JOIN push.frequency_log fl ON fl.service_id = k.service_id AND fl.subject_id = k.subject_id
                    WHERE k.service_id = \(delivery.serviceId) AND k.subject = \(unescaped: SubjectKeys.subjectOfSubscription)
                      AND fl.planned_at > now() - \(cap?.periodHours ?? 0)::int * interval '1 hour'
                ) >= \(cap?.messages ?? 0) AS capped
            ) c
            WHERE app_id = ANY(\(filter.apps))
              AND CASE WHEN \(filter.isProof) THEN user_key = ANY(\(filter.proofUserKeys)) OR registration_token = ANY(\(filter.proofTokens))
                  ELSE (NOT \(filter.byUserKey) OR user_key = ANY(\(filter.userKeys))) AND params @> \(filter.conditions)::jsonb
                       AND \(unescaped: filter.filter.condition) END
            GROUP BY 1, 2, 3, 4
            """,
            logger: logger)
        var result: [CountRow] = []
        for try await (appId, disabled, reason, language, devices) in rows.decode((UUID, Bool, String?, String, Int64).self) {
            result.append(CountRow(appId: appId, disabled: disabled, reason: reason, language: language, devices: Int(devices)))
        }
        return result
    }

    /// The first enabled subscriptions of one app the audience matches, in the fan-out's order.
    private func firstSubscriptions(_ delivery: DeliveryAccepted, app: UUID, limit: Int, on connection: PostgresConnection) async throws
        -> [TargetedSubscription]
    {
        let filter = try AudienceQuery(delivery)
        let rows = try await connection.query(
            """
            SELECT registration_token, user_key, params::text, coalesce(os_language, '')
            FROM push.subscriptions s CROSS JOIN (SELECT \(filter.filter.values)::text[] AS v) f
            WHERE app_id = \(app) AND NOT disabled AND unsubscribed_at IS NULL
              AND CASE WHEN \(filter.isProof) THEN user_key = ANY(\(filter.proofUserKeys)) OR registration_token = ANY(\(filter.proofTokens))
                  ELSE (NOT \(filter.byUserKey) OR user_key = ANY(\(filter.userKeys))) AND params @> \(filter.conditions)::jsonb
                       AND \(unescaped: filter.filter.condition) END
            ORDER BY registration_token
            LIMIT \(limit)
            """,
            logger: logger)
        var result: [TargetedSubscription] = []
        for try await (token, userKey, params, language) in rows.decode((String, String, String, String).self) {
            let values = (try? JSONDecoder().decode([String: String].self, from: Data(params.utf8))) ?? [:]
            result.append(TargetedSubscription(appId: app, registrationToken: token, userKey: userKey, params: values, osLanguage: language))
        }
        return result
    }

    private func unmatchedUserKeys(_ delivery: DeliveryAccepted, on connection: PostgresConnection) async throws -> Int? {
        guard let keys = delivery.proof != nil ? delivery.proof?.userKeys : delivery.audience.userKeys else { return nil }
        let apps = delivery.apps.map(\.appId)
        let rows = try await connection.query(
            """
            SELECT count(*) FROM (SELECT DISTINCT unnest(\(keys)) AS key) AS requested
            WHERE NOT EXISTS (SELECT 1 FROM push.subscriptions s WHERE s.app_id = ANY(\(apps)) AND s.user_key = requested.key)
            """,
            logger: logger)
        for try await count in rows.decode(Int64.self) { return Int(count) }
        return 0
    }
}

/// A delivery's audience as the bind values of the targeting statements (the fan-out's
/// `TargetingQuery` reads the same columns the same way).
struct AudienceQuery {
    var apps: [UUID]
    var byUserKey: Bool
    var userKeys: [String]
    /// The `where` conditions as a jsonb containment object (`{}` for none).
    var conditions: String
    /// The `filter` as SQL on `push.subscriptions s` and its values (`f.v`).
    var filter: AudienceFilterSQL
    /// A proof targets its recipients instead of the audience.
    var isProof: Bool
    var proofUserKeys: [String]
    var proofTokens: [String]

    init(_ delivery: DeliveryAccepted) throws {
        isProof = delivery.proof != nil
        proofUserKeys = delivery.proof?.userKeys ?? []
        proofTokens = delivery.proof?.registrationTokens ?? []
        apps = delivery.apps.map(\.appId)
        byUserKey = delivery.audience.isUserKeyList
        userKeys = delivery.audience.userKeys ?? []
        conditions =
            try (delivery.audience.where).map { conditions in
                String(decoding: try JSONEncoder().encode(conditions.mapValues(\.text)), as: UTF8.self)
            } ?? "{}"
        filter = AudienceFilterSQL(delivery.audience.filter, reference: delivery.sendAt)
    }
}
