import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushRuntime

extension DeliveryAdmin {
    /// One delivery with its headline figures (`GET /admin/v1/deliveries`): the `deliveries`
    /// projection joined to the `delivery_indicators` view, so the figures are the analysts'.
    package struct DeliverySummary: Codable, Sendable, Equatable {
        package var deliveryId: String
        package var requestId: String
        package var serviceName: String
        /// `accepted`, `planning` or `planned` (docs/database.md, `push.deliveries`): how far the
        /// fan-out went.
        package var status: String
        /// `active`, `paused` or `cancelled` (`push.delivery_controls`): what an operator asked.
        package var control: String
        /// A proof (sent to its test recipients only).
        package var proof: Bool
        package var acceptedAt: Date
        package var sendAt: Date
        package var validUntil: Date
        package var plannedAt: Date?
        package var indicators: Indicators
    }

    /// The `delivery_indicators` columns (zero before the first message was planned).
    package struct Indicators: Codable, Sendable, Equatable {
        package var toDeliver: Int64
        package var excluded: Int64
        package var sent: Int64
        package var failed: Int64
        package var failedHard: Int64
        package var failedSoft: Int64
        package var failedIgnored: Int64
        package var expired: Int64
        /// Messages not sent because the delivery was cancelled.
        package var cancelled: Int64
        package var processed: Int64
        /// `toDeliver - processed`: messages without a final status yet.
        package var pending: Int64
        package var impressions: Int64
        package var opens: Int64
    }

    /// A delivery in full (`GET /admin/v1/deliveries/{id}`): the summary, what was asked, and
    /// the failures by reason and platform.
    package struct DeliveryDetail: Codable, Sendable, Equatable {
        package var delivery: DeliverySummary
        package var apps: [DeliveryApp]
        package var audience: DeliveryRequest.Audience
        package var content: DeliveryRequest.Content
        package var throttlePerSecond: Int?
        /// The lane its messages took (`push.deliveries.priority`).
        package var priority: DeliveryPriority
        /// The template the content came from and the version used, if any.
        package var template: DeliveryRequest.TemplateReference?
        package var failures: [FailureCount]
        /// With `content.languages`: the messages with a final status per language texts
        /// (`broad_log.language`; null for the default texts), the most first; absent otherwise.
        package var languages: [LanguageFigures]?
        /// With `content.variants`: each variant's figures (`push.delivery_variants`), in the
        /// request's order, a variant without a final status yet with zeros; absent otherwise.
        package var variants: [VariantFigures]?
    }

    package struct VariantFigures: Codable, Sendable, Equatable {
        package var variant: String
        package var share: Int
        /// Messages with a final status (`broad_log` rows).
        package var messages: Int64
        package var sent: Int64
        package var failed: Int64
        package var expired: Int64
        package var cancelled: Int64
        /// Distinct messages with a `received` / `opened` hit.
        package var received: Int64
        package var opened: Int64
        /// `opened / sent`, 4 decimals; null while nothing is sent.
        package var openRate: Double?
    }

    package struct LanguageFigures: Codable, Sendable, Equatable {
        package var language: String?
        /// Messages with a final status (`broad_log` rows).
        package var messages: Int64
        package var sent: Int64
        package var failed: Int64
        package var expired: Int64
        package var cancelled: Int64
    }

    package struct FailureCount: Codable, Sendable, Equatable {
        package var platform: Platform
        package var failureType: String
        package var reason: String
        package var messages: Int64
    }

    /// Largest page of `list`.
    package static let maximumListLimit = 500

    private static let summaryColumns = """
        d.delivery_id, d.request_id, d.service_name, d.status, d.accepted_at, d.send_at, d.valid_until, d.planned_at,
        coalesce(i.to_deliver, 0), coalesce(i.excluded, d.excluded, 0), coalesce(i.sent, 0), coalesce(i.failed, 0), coalesce(i.failed_hard, 0),
        coalesce(i.failed_soft, 0), coalesce(i.failed_ignored, 0), coalesce(i.expired, 0), coalesce(i.processed, 0), coalesce(i.impressions, 0),
        coalesce(i.opens, 0), coalesce(ctl.state, 'active'), coalesce(i.cancelled, 0), d.proof
        """

    /// Deliveries, most recently accepted first; `service` and `status` filter; proofs only when
    /// `proofs`.
    package func list(service: String?, status: String?, proofs: Bool = false, limit: Int) async throws -> [DeliverySummary] {
        guard (1...Self.maximumListLimit).contains(limit) else { throw AdminError.badRequest("limit must be between 1 and \(Self.maximumListLimit)") }
        if let status, !["accepted", "planning", "planned"].contains(status) {
            throw AdminError.badRequest("status must be accepted, planning or planned")
        }
        let rows = try await postgres.query(
            """
            SELECT \(unescaped: Self.summaryColumns)
            FROM push.deliveries d LEFT JOIN push.delivery_indicators i USING (delivery_id) LEFT JOIN push.delivery_controls ctl USING (delivery_id)
            WHERE (\(service)::text IS NULL OR d.service_name = \(service)) AND (\(status)::text IS NULL OR d.status = \(status))
              AND (\(proofs) OR NOT d.proof)
            ORDER BY d.accepted_at DESC, d.delivery_id DESC
            LIMIT \(limit)
            """,
            logger: logger)
        var result: [DeliverySummary] = []
        for try await row in rows { result.append(try Self.summary(row)) }
        return result
    }

    package func detail(deliveryId: String) async throws -> DeliveryDetail? {
        let rows = try await postgres.query(
            """
            SELECT \(unescaped: Self.summaryColumns), d.apps::text, d.audience::text, d.content::text, d.throttle_per_second, d.template_name,
                   d.template_version, d.priority
            FROM push.deliveries d LEFT JOIN push.delivery_indicators i USING (delivery_id) LEFT JOIN push.delivery_controls ctl USING (delivery_id)
            WHERE d.delivery_id = \(deliveryId)
            """,
            logger: logger)
        var found: DeliveryDetail?
        for try await row in rows {
            let summary = try Self.summary(row)
            let cells = row.makeRandomAccess()
            let apps = try cells[22].decode(String.self)
            let audience = try cells[23].decode(String.self)
            let content = try cells[24].decode(String.self)
            let throttle = try cells[25].decode(Int?.self)
            let templateName = try cells[26].decode(String?.self)
            let templateVersion = try cells[27].decode(Int?.self)
            let priority = try cells[28].decode(String.self)
            let decoder = EventJSON.decoder
            found = DeliveryDetail(
                delivery: summary, apps: try decoder.decode([DeliveryApp].self, from: Data(apps.utf8)),
                audience: try decoder.decode(DeliveryRequest.Audience.self, from: Data(audience.utf8)),
                content: try decoder.decode(DeliveryRequest.Content.self, from: Data(content.utf8)), throttlePerSecond: throttle,
                priority: DeliveryPriority(rawValue: priority) ?? .bulk,
                template: templateName.map { DeliveryRequest.TemplateReference(name: $0, version: templateVersion) }, failures: [])
        }
        guard var detail = found else { return nil }
        let failures = try await postgres.query(
            """
            SELECT platform, failure_type, failure_reason, count(*)
            FROM push.broad_log
            WHERE delivery_id = \(deliveryId) AND status = 'failed'
            GROUP BY platform, failure_type, failure_reason
            ORDER BY count(*) DESC, platform, failure_type, failure_reason
            """,
            logger: logger)
        for try await (platform, type, reason, count) in failures.decode((String, String?, String?, Int64).self) {
            detail.failures.append(
                FailureCount(platform: Platform(rawValue: platform) ?? .android, failureType: type ?? "", reason: reason ?? "", messages: count))
        }
        if detail.content.languages != nil {
            let figures = try await postgres.query(
                """
                SELECT language, count(*), count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
                       count(*) FILTER (WHERE status = 'expired'), count(*) FILTER (WHERE status = 'cancelled')
                FROM push.broad_log
                WHERE delivery_id = \(deliveryId)
                GROUP BY language
                ORDER BY count(*) DESC, language NULLS LAST
                """,
                logger: logger)
            var languages: [LanguageFigures] = []
            for try await (language, messages, sent, failed, expired, cancelled) in figures.decode((String?, Int64, Int64, Int64, Int64, Int64).self) {
                languages.append(
                    LanguageFigures(language: language, messages: messages, sent: sent, failed: failed, expired: expired, cancelled: cancelled))
            }
            detail.languages = languages
        }
        if let variants = detail.content.variants {
            let rows = try await postgres.query(
                """
                SELECT variant, messages, sent, failed, expired, cancelled, received, opened, open_rate::float8
                FROM push.delivery_variants WHERE delivery_id = \(deliveryId)
                """,
                logger: logger)
            var figures: [String: VariantFigures] = [:]
            for try await (variant, messages, sent, failed, expired, cancelled, received, opened, openRate) in rows.decode(
                (String, Int64, Int64, Int64, Int64, Int64, Int64, Int64, Double?).self)
            {
                figures[variant] = VariantFigures(
                    variant: variant, share: 0, messages: messages, sent: sent, failed: failed, expired: expired, cancelled: cancelled,
                    received: received, opened: opened, openRate: openRate)
            }
            detail.variants = variants.map { variant in
                var row =
                    figures[variant.name]
                    ?? VariantFigures(
                        variant: variant.name, share: 0, messages: 0, sent: 0, failed: 0, expired: 0, cancelled: 0, received: 0, opened: 0, openRate: nil)
                row.share = variant.share
                return row
            }
        }
        return detail
    }

    private static func summary(_ row: PostgresRow) throws -> DeliverySummary {
        let cells = row.makeRandomAccess()
        func figure(_ index: Int) throws -> Int64 { try cells[index].decode(Int64.self) }
        let toDeliver = try figure(8)
        let processed = try figure(16)
        return DeliverySummary(
            deliveryId: try cells[0].decode(String.self), requestId: try cells[1].decode(String.self), serviceName: try cells[2].decode(String.self),
            status: try cells[3].decode(String.self), control: try cells[19].decode(String.self), proof: try cells[21].decode(Bool.self),
            acceptedAt: try cells[4].decode(Date.self),
            sendAt: try cells[5].decode(Date.self),
            validUntil: try cells[6].decode(Date.self), plannedAt: try cells[7].decode(Date?.self),
            indicators: Indicators(
                toDeliver: toDeliver, excluded: try figure(9), sent: try figure(10), failed: try figure(11), failedHard: try figure(12),
                failedSoft: try figure(13), failedIgnored: try figure(14), expired: try figure(15), cancelled: try figure(20), processed: processed,
                pending: max(0, toDeliver - processed), impressions: try figure(17), opens: try figure(18)))
    }
}
