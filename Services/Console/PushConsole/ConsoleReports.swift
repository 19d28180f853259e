import Foundation
import Logging
import PostgresNIO
import PushRuntime

/// What the console's pages read from PostgreSQL: the analysts' read models with the queries of
/// docs/analysts.md (the funnel from `delivery_indicators`, failures by reason and platform, sends
/// per minute, receptions and opens per hour, per app), so every figure it shows is the one those
/// queries give (`ConsoleBrowserTests` compares them). Reads only; every write goes through the
/// admin APIs.
package struct ConsoleReports: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    package init(postgres: PostgresClient, logger: Logger) {
        self.postgres = postgres
        self.logger = logger
    }

    // MARK: deliveries

    package struct DeliveryRow: Sendable {
        package var deliveryId, serviceName, requestId, status: String
        package var proof: Bool
        package var acceptedAt: Date
        package var control: String?
        package var toDeliver: Int?
        package var processed, sent, failed, opens: Int
        package var openRate: Double?

        /// What the list and the report say the delivery is doing, in words.
        package var state: String {
            Funnel.state(status: status, control: control, toDeliver: toDeliver, processed: processed)
        }
    }

    package func deliveries(includeProofs: Bool, limit: Int = 200) async throws -> [DeliveryRow] {
        let rows = try await postgres.query(
            """
            SELECT d.delivery_id, d.service_name, d.request_id, d.status, d.proof, d.accepted_at, c.state,
                   i.to_deliver::bigint, coalesce(i.processed, 0)::bigint, coalesce(i.sent, 0)::bigint, coalesce(i.failed, 0)::bigint,
                   coalesce(i.opens, 0)::bigint, i.open_rate::float8
            FROM push.deliveries d
            LEFT JOIN push.delivery_indicators i USING (delivery_id)
            LEFT JOIN push.delivery_controls c USING (delivery_id)
            WHERE \(includeProofs) OR NOT d.proof
            ORDER BY d.accepted_at DESC, d.delivery_id DESC
            LIMIT \(limit)
            """,
            logger: logger
        )
        var result: [DeliveryRow] = []
        for try await row in rows {
            let r = row.makeRandomAccess()
            result.append(
                DeliveryRow(
                    deliveryId: try r[0].decode(String.self), serviceName: try r[1].decode(String.self), requestId: try r[2].decode(String.self),
                    status: try r[3].decode(String.self), proof: try r[4].decode(Bool.self), acceptedAt: try r[5].decode(Date.self),
                    control: try r[6].decode(String?.self), toDeliver: try r[7].decode(Int?.self), processed: try r[8].decode(Int.self),
                    sent: try r[9].decode(Int.self), failed: try r[10].decode(Int.self), opens: try r[11].decode(Int.self),
                    openRate: try r[12].decode(Double?.self)
                ))
        }
        return result
    }

    // MARK: one delivery's report

    /// The funnel of one delivery: `push.delivery_indicators` (docs/analysts.md, "Indicators").
    package struct Funnel: Sendable {
        package var deliveryId, serviceName, requestId, status: String
        package var proof: Bool
        package var acceptedAt: Date
        package var plannedAt: Date?
        package var control: String?
        /// `to_deliver` (shown as "targeted", as `pushctl report` does) and `excluded`: null until planned.
        package var toDeliver, excluded: Int?
        package var processed, sent, failed, failedHard, failedSoft, failedIgnored, expired, cancelled, impressions, opens: Int
        package var impressionRate, openRate: Double?

        /// `to_deliver - processed` once planned.
        package var pending: Int? { toDeliver.map { max($0 - processed, 0) } }
        /// Planned and every message final: the figures will not change any more.
        package var isFinal: Bool { status == "planned" && toDeliver.map { processed >= $0 } == true }
        package var state: String { Self.state(status: status, control: control, toDeliver: toDeliver, processed: processed) }

        static func state(status: String, control: String?, toDeliver: Int?, processed: Int) -> String {
            let finished = status == "planned" && toDeliver.map { processed >= $0 } == true
            switch (control, finished) {
            case ("cancelled", true): return "cancelled"
            // Not started yet: it never will (planned empty when its time comes).
            case ("cancelled", false) where status == "accepted": return "cancelled"
            case ("cancelled", false): return "cancelling"
            case ("paused", _): return "paused"
            case (_, true): return "finished"
            default: return status == "planned" ? "sending" : status
            }
        }
    }

    /// Waits until the deliveries projection shows `deliveryId` (true), at most `timeout`.
    package func awaitDelivery(_ deliveryId: String, timeout: Duration) async throws -> Bool {
        let logger = logger
        return try await ProjectionWait.deliveries.until(timeout: timeout, postgres: postgres, logger: logger) { connection in
            let rows = try await connection.query("SELECT 1 FROM push.deliveries WHERE delivery_id = \(deliveryId)", logger: logger)
            for try await _ in rows { return true }
            return false
        }
    }

    package func funnel(deliveryId: String) async throws -> Funnel? {
        let rows = try await postgres.query(
            """
            SELECT d.delivery_id, d.service_name, d.request_id, d.status, d.proof, d.accepted_at, d.planned_at, c.state,
                   i.to_deliver::bigint, i.excluded::bigint, coalesce(i.processed, 0)::bigint, coalesce(i.sent, 0)::bigint,
                   coalesce(i.failed, 0)::bigint, coalesce(i.failed_hard, 0)::bigint, coalesce(i.failed_soft, 0)::bigint,
                   coalesce(i.failed_ignored, 0)::bigint, coalesce(i.expired, 0)::bigint, coalesce(i.cancelled, 0)::bigint,
                   coalesce(i.impressions, 0)::bigint, coalesce(i.opens, 0)::bigint, i.impression_rate::float8, i.open_rate::float8
            FROM push.deliveries d
            LEFT JOIN push.delivery_indicators i USING (delivery_id)
            LEFT JOIN push.delivery_controls c USING (delivery_id)
            WHERE d.delivery_id = \(deliveryId)
            """,
            logger: logger
        )
        for try await row in rows {
            let r = row.makeRandomAccess()
            return Funnel(
                deliveryId: try r[0].decode(String.self), serviceName: try r[1].decode(String.self), requestId: try r[2].decode(String.self),
                status: try r[3].decode(String.self), proof: try r[4].decode(Bool.self), acceptedAt: try r[5].decode(Date.self),
                plannedAt: try r[6].decode(Date?.self), control: try r[7].decode(String?.self), toDeliver: try r[8].decode(Int?.self),
                excluded: try r[9].decode(Int?.self), processed: try r[10].decode(Int.self), sent: try r[11].decode(Int.self),
                failed: try r[12].decode(Int.self), failedHard: try r[13].decode(Int.self), failedSoft: try r[14].decode(Int.self),
                failedIgnored: try r[15].decode(Int.self), expired: try r[16].decode(Int.self), cancelled: try r[17].decode(Int.self),
                impressions: try r[18].decode(Int.self), opens: try r[19].decode(Int.self), impressionRate: try r[20].decode(Double?.self),
                openRate: try r[21].decode(Double?.self)
            )
        }
        return nil
    }

    package struct Failure: Sendable {
        package var type, reason, platform: String
        package var messages: Int
    }

    /// docs/analysts.md, "Failure reasons of one delivery".
    package func failures(deliveryId: String) async throws -> [Failure] {
        let rows = try await postgres.query(
            """
            SELECT failure_type, failure_reason, platform, count(*) AS messages
            FROM push.broad_log
            WHERE delivery_id = \(deliveryId) AND status = 'failed'
            GROUP BY failure_type, failure_reason, platform
            ORDER BY messages DESC, failure_type, failure_reason
            """,
            logger: logger
        )
        var result: [Failure] = []
        for try await (type, reason, platform, messages) in rows.decode((String?, String?, String, Int).self) {
            result.append(Failure(type: type ?? "—", reason: reason ?? "—", platform: platform, messages: messages))
        }
        return result
    }

    package struct Bucket: Sendable {
        package var start: Date
        package var counts: [Int]
    }

    /// docs/analysts.md, "Sends per minute of one delivery".
    package func sendsPerMinute(deliveryId: String) async throws -> [Bucket] {
        let rows = try await postgres.query(
            """
            SELECT date_trunc('minute', sent_at) AS minute, count(*) AS sent
            FROM push.broad_log
            WHERE delivery_id = \(deliveryId) AND status = 'sent'
            GROUP BY 1
            ORDER BY 1
            """,
            logger: logger
        )
        var result: [Bucket] = []
        for try await (minute, sent) in rows.decode((Date, Int).self) { result.append(Bucket(start: minute, counts: [sent])) }
        return result
    }

    /// docs/analysts.md, "Receptions and opens per hour of one delivery" (first hit of each
    /// message, so the sums are the funnel's received and opened).
    package func trackingPerHour(deliveryId: String) async throws -> [Bucket] {
        let rows = try await postgres.query(
            """
            SELECT date_trunc('hour', first_at) AS hour,
                   count(*) FILTER (WHERE kind = 'received') AS received,
                   count(*) FILTER (WHERE kind = 'opened') AS opened
            FROM push.tracking_firsts
            WHERE delivery_id = \(deliveryId)
            GROUP BY 1
            ORDER BY 1
            """,
            logger: logger
        )
        var result: [Bucket] = []
        for try await (hour, received, opened) in rows.decode((Date, Int, Int).self) {
            result.append(Bucket(start: hour, counts: [received, opened]))
        }
        return result
    }

    package struct AppFigures: Sendable {
        package var app, platform, environment: String
        package var messages, sent, failed, expired, cancelled, pending, received, opened: Int
    }

    /// docs/analysts.md, "One delivery per app".
    package func perApp(deliveryId: String) async throws -> [AppFigures] {
        let rows = try await postgres.query(
            """
            SELECT a.label AS app, a.platform, a.environment, count(*) AS messages,
                   count(*) FILTER (WHERE b.status = 'sent') AS sent,
                   count(*) FILTER (WHERE b.status = 'failed') AS failed,
                   count(*) FILTER (WHERE b.status = 'expired') AS expired,
                   count(*) FILTER (WHERE b.status = 'cancelled') AS cancelled,
                   count(*) FILTER (WHERE b.status = 'pending') AS pending,
                   count(r.message_id) AS received,
                   count(o.message_id) AS opened
            FROM push.broad_log b
            JOIN push.apps a ON a.app_id = b.app_id
            LEFT JOIN push.tracking_firsts r
                   ON r.delivery_id = b.delivery_id AND r.message_id = b.broad_log_id::text AND r.kind = 'received'
            LEFT JOIN push.tracking_firsts o
                   ON o.delivery_id = b.delivery_id AND o.message_id = b.broad_log_id::text AND o.kind = 'opened'
            WHERE b.delivery_id = \(deliveryId)
            GROUP BY a.app_id, a.label, a.platform, a.environment
            ORDER BY a.label, a.platform, a.environment
            """,
            logger: logger
        )
        var result: [AppFigures] = []
        for try await row in rows {
            let r = row.makeRandomAccess()
            result.append(
                AppFigures(
                    app: try r[0].decode(String.self), platform: try r[1].decode(String.self), environment: try r[2].decode(String.self),
                    messages: try r[3].decode(Int.self), sent: try r[4].decode(Int.self), failed: try r[5].decode(Int.self),
                    expired: try r[6].decode(Int.self), cancelled: try r[7].decode(Int.self), pending: try r[8].decode(Int.self),
                    received: try r[9].decode(Int.self), opened: try r[10].decode(Int.self)
                ))
        }
        return result
    }

    package struct VariantFigures: Sendable {
        package var variant: String
        package var messages, sent, failed, received, opened: Int
        package var openRate: Double?
    }

    /// docs/analysts.md, "An A/B test": `push.delivery_variants`, by variant name (empty for a
    /// delivery without variants).
    package func perVariant(deliveryId: String) async throws -> [VariantFigures] {
        let rows = try await postgres.query(
            """
            SELECT variant, messages, sent, failed, received, opened, open_rate::float8
            FROM push.delivery_variants WHERE delivery_id = \(deliveryId)
            ORDER BY variant
            """,
            logger: logger
        )
        var result: [VariantFigures] = []
        for try await (variant, messages, sent, failed, received, opened, openRate) in rows.decode((String, Int, Int, Int, Int, Int, Double?).self) {
            result.append(
                VariantFigures(variant: variant, messages: messages, sent: sent, failed: failed, received: received, opened: opened, openRate: openRate))
        }
        return result
    }

    package struct LanguageFigures: Sendable {
        /// The `content.languages` tag the messages carried; empty for the default texts.
        package var language: String
        package var messages, sent, failed, received, opened: Int
    }

    /// A delivery with `content.languages`, by the texts its messages carried (`broad_log.language`,
    /// docs/analysts.md "Opens per language"); empty for a delivery without languages.
    package func perLanguage(deliveryId: String) async throws -> [LanguageFigures] {
        let rows = try await postgres.query(
            """
            SELECT coalesce(b.language, ''), count(*)::int, count(*) FILTER (WHERE b.status = 'sent')::int,
                   count(*) FILTER (WHERE b.status = 'failed')::int, count(r.message_id)::int, count(o.message_id)::int
            FROM push.broad_log b
            LEFT JOIN push.tracking_firsts r ON r.delivery_id = b.delivery_id AND r.message_id = b.broad_log_id::text AND r.kind = 'received'
            LEFT JOIN push.tracking_firsts o ON o.delivery_id = b.delivery_id AND o.message_id = b.broad_log_id::text AND o.kind = 'opened'
            WHERE b.delivery_id = \(deliveryId)
            GROUP BY 1 ORDER BY 2 DESC, 1
            """,
            logger: logger
        )
        var result: [LanguageFigures] = []
        for try await (language, messages, sent, failed, received, opened) in rows.decode((String, Int, Int, Int, Int, Int).self) {
            result.append(LanguageFigures(language: language, messages: messages, sent: sent, failed: failed, received: received, opened: opened))
        }
        return result.contains { !$0.language.isEmpty } ? result : []
    }

    // MARK: catalog

    package struct CatalogApp: Sendable {
        package var service, serviceLabel: String
        package var app: App?
        /// The service's frequency cap (`push.services.frequency_cap_*`): at most `messages` bulk
        /// deliveries per person in `periodHours`; nil without one.
        package var frequencyCap: (messages: Int, periodHours: Int)?

        package init(service: String, serviceLabel: String, app: App?) {
            self.service = service
            self.serviceLabel = serviceLabel
            self.app = app
        }

        package struct App: Sendable {
            package var appId, label, platform, environment, integrationKey: String
            package var bundleId, fcmProjectId: String?
            package var variables, sounds, subscriptionParameters: String
            package var credentialKind, credentialFingerprint: String?
            package var credentialUpdatedAt: Date?
            package var credentialExpiresAt: String?

            package init(
                appId: String, label: String, platform: String, environment: String, integrationKey: String, bundleId: String?, fcmProjectId: String?,
                variables: String, sounds: String, subscriptionParameters: String, credentialKind: String?, credentialFingerprint: String?,
                credentialUpdatedAt: Date?, credentialExpiresAt: String?
            ) {
                self.appId = appId
                self.label = label
                self.platform = platform
                self.environment = environment
                self.integrationKey = integrationKey
                self.bundleId = bundleId
                self.fcmProjectId = fcmProjectId
                self.variables = variables
                self.sounds = sounds
                self.subscriptionParameters = subscriptionParameters
                self.credentialKind = credentialKind
                self.credentialFingerprint = credentialFingerprint
                self.credentialUpdatedAt = credentialUpdatedAt
                self.credentialExpiresAt = credentialExpiresAt
            }
        }
    }

    /// Services and their apps (`push.services`, `push.apps`), with each app's active credential
    /// as its kind, fingerprint, time and expiry (certificates): never the secret.
    package func catalog() async throws -> [CatalogApp] {
        let rows = try await postgres.query(
            """
            SELECT s.name, s.label, a.label, a.platform, a.environment, a.integration_key, a.bundle_id, a.fcm_project_id,
                   a.variables::text, a.sounds::text, a.subscription_parameters::text,
                   a.credential_kind, a.credential_fingerprint, a.credential_updated_at, c.metadata->>'expiresAt', a.app_id::text,
                   s.frequency_cap_messages, s.frequency_cap_period_hours
            FROM push.services s
            LEFT JOIN push.apps a ON a.service_id = s.service_id
            LEFT JOIN push.app_credentials c ON c.credential_id = a.credential_id
            ORDER BY s.name, a.label, a.platform, a.environment
            LIMIT 2000
            """,
            logger: logger
        )
        var result: [CatalogApp] = []
        for try await row in rows {
            let r = row.makeRandomAccess()
            var entry = CatalogApp(service: try r[0].decode(String.self), serviceLabel: try r[1].decode(String.self), app: nil)
            if let messages = try r[16].decode(Int?.self), let hours = try r[17].decode(Int?.self) { entry.frequencyCap = (messages, hours) }
            if let label = try r[2].decode(String?.self) {
                entry.app = CatalogApp.App(
                    appId: try r[15].decode(String.self), label: label, platform: try r[3].decode(String.self), environment: try r[4].decode(String.self),
                    integrationKey: try r[5].decode(String.self), bundleId: try r[6].decode(String?.self), fcmProjectId: try r[7].decode(String?.self),
                    variables: try r[8].decode(String?.self) ?? "[]", sounds: try r[9].decode(String?.self) ?? "[]",
                    subscriptionParameters: try r[10].decode(String?.self) ?? "[]", credentialKind: try r[11].decode(String?.self),
                    credentialFingerprint: try r[12].decode(String?.self), credentialUpdatedAt: try r[13].decode(Date?.self),
                    credentialExpiresAt: try r[14].decode(String?.self)
                )
            }
            result.append(entry)
        }
        return result
    }

    // MARK: devices

    package struct Device: Sendable {
        package var service, app, platform, environment, userKey, token: String
        package var deviceName, deviceModel, osName, osVersion: String
        package var params: String
        package var disabled: Bool
        package var disabledReason: String?
        package var disabledAt, invalidSince: Date?
        package var registeredAt: Date
        /// The app's id (the admin API's quarantine lift names the app).
        package var appId = ""
        /// Set while the subscription is unsubscribed (admin API `unsubscribe`).
        package var unsubscribedAt: Date?
        /// The device's last notifications (`broad_log`), newest first, at most
        /// `ConsoleReports.notificationsPerDevice`.
        package var notifications: [Notification] = []
    }

    /// One message the device was planned: its delivery, its outcome, and whether the app
    /// reported it received or opened (`tracking_firsts`).
    package struct Notification: Sendable, Equatable {
        package var deliveryId, status: String
        package var failureReason: String?
        /// When it was sent, or its last change (pending, failed, expired, cancelled).
        package var at: Date
        package var received, opened: Bool
    }

    /// How many of a device's last notifications the devices page lists.
    package static let notificationsPerDevice = 5

    // MARK: audit trail

    /// One call of the admin APIs' audit trail (`push.audit_log`).
    package struct AuditEntry: Sendable, Equatable {
        package var recordedAt: Date
        package var operatorName, role, method, path, permission: String
        package var status: Int
        package var requestId: String
        package var service: String?

        package init(
            recordedAt: Date, operatorName: String, role: String, method: String, path: String, permission: String, status: Int, requestId: String,
            service: String?
        ) {
            self.recordedAt = recordedAt
            self.operatorName = operatorName
            self.role = role
            self.method = method
            self.path = path
            self.permission = permission
            self.status = status
            self.requestId = requestId
            self.service = service
        }
    }

    /// Which calls the audit page shows: each filter set narrows them (empty: any).
    package struct AuditFilter: Sendable, Equatable {
        package var operatorName = ""
        package var service = ""
        package var permission = ""
        /// At or after.
        package var since: Date?
        /// Before.
        package var until: Date?
        package var limit = 200
    }

    /// The newest calls matching `filter`, newest first, at most `filter.limit`.
    package func audit(_ filter: AuditFilter) async throws -> [AuditEntry] {
        let name = filter.operatorName.isEmpty ? nil : filter.operatorName
        let service = filter.service.isEmpty ? nil : filter.service
        let permission = filter.permission.isEmpty ? nil : filter.permission
        let rows = try await postgres.query(
            """
            SELECT recorded_at, operator_name, role, method, path, permission, status, request_id, service
            FROM push.audit_log
            WHERE (\(name)::text IS NULL OR operator_name = \(name)) AND (\(service)::text IS NULL OR service = \(service))
              AND (\(permission)::text IS NULL OR permission = \(permission))
              AND (\(filter.since)::timestamptz IS NULL OR recorded_at >= \(filter.since))
              AND (\(filter.until)::timestamptz IS NULL OR recorded_at < \(filter.until))
            ORDER BY recorded_at DESC, audit_id
            LIMIT \(max(1, min(filter.limit, 1000)))
            """,
            logger: logger
        )
        var entries: [AuditEntry] = []
        for try await (at, name, role, method, path, permission, status, requestId, service) in rows.decode(
            (Date, String, String, String, String, String, Int, String, String?).self)
        {
            entries.append(
                AuditEntry(
                    recordedAt: at, operatorName: name, role: role, method: method, path: path, permission: permission, status: status, requestId: requestId,
                    service: service))
        }
        return entries
    }

    /// The subscriptions whose user key or registration token is `search` (an APNs token in any
    /// case), at most 100.
    package func devices(search: String) async throws -> [Device] {
        let rows = try await postgres.query(
            """
            SELECT s.name, a.label, sub.platform, a.environment, sub.user_key, sub.registration_token,
                   sub.device_name, sub.device_model, sub.os_name, sub.os_version, sub.params::text,
                   sub.disabled, sub.disabled_reason, sub.disabled_at, sub.invalid_since, sub.registered_at, sub.app_id,
                   sub.unsubscribed_at
            FROM push.subscriptions sub
            JOIN push.apps a ON a.app_id = sub.app_id
            JOIN push.services s ON s.service_id = a.service_id
            WHERE sub.user_key = \(search) OR sub.registration_token = \(search) OR sub.registration_token = lower(\(search))
            ORDER BY s.name, a.label, sub.registered_at DESC
            LIMIT 100
            """,
            logger: logger
        )
        var result: [Device] = []
        var appIds: [UUID] = []
        for try await row in rows {
            let r = row.makeRandomAccess()
            let appId = try r[16].decode(UUID.self)
            appIds.append(appId)
            result.append(
                Device(
                    service: try r[0].decode(String.self), app: try r[1].decode(String.self), platform: try r[2].decode(String.self),
                    environment: try r[3].decode(String.self), userKey: try r[4].decode(String.self), token: try r[5].decode(String.self),
                    deviceName: try r[6].decode(String?.self) ?? "", deviceModel: try r[7].decode(String?.self) ?? "",
                    osName: try r[8].decode(String?.self) ?? "", osVersion: try r[9].decode(String?.self) ?? "",
                    params: try r[10].decode(String?.self) ?? "{}", disabled: try r[11].decode(Bool.self),
                    disabledReason: try r[12].decode(String?.self), disabledAt: try r[13].decode(Date?.self),
                    invalidSince: try r[14].decode(Date?.self), registeredAt: try r[15].decode(Date.self), appId: appId.uuidString.lowercased(),
                    unsubscribedAt: try r[17].decode(Date?.self)
                ))
        }
        guard !result.isEmpty else { return result }
        let notifications = try await lastNotifications(appIds: appIds, tokens: result.map(\.token))
        for index in result.indices {
            result[index].notifications = notifications[DeviceKey(appId: appIds[index], token: result[index].token)] ?? []
        }
        return result
    }

    private struct DeviceKey: Hashable {
        var appId: UUID
        var token: String
    }

    /// The last `notificationsPerDevice` messages of each (app, token), newest first, with
    /// their receptions and opens.
    private func lastNotifications(appIds: [UUID], tokens: [String]) async throws -> [DeviceKey: [Notification]] {
        let rows = try await postgres.query(
            """
            SELECT b.app_id, b.registration_token, b.delivery_id, b.status, b.failure_reason, coalesce(b.sent_at, b.updated_at),
                   EXISTS (SELECT 1 FROM push.tracking_firsts t
                           WHERE t.delivery_id = b.delivery_id AND t.message_id = b.broad_log_id::text AND t.kind = 'received'),
                   EXISTS (SELECT 1 FROM push.tracking_firsts t
                           WHERE t.delivery_id = b.delivery_id AND t.message_id = b.broad_log_id::text AND t.kind = 'opened')
            FROM (SELECT *, row_number() OVER (PARTITION BY app_id, registration_token ORDER BY created_at DESC, message_id) AS n
                  FROM push.broad_log
                  WHERE (app_id, registration_token) IN (SELECT * FROM unnest(\(appIds)::uuid[], \(tokens)::text[]))) b
            WHERE b.n <= \(Self.notificationsPerDevice)
            ORDER BY b.app_id, b.registration_token, b.n
            """,
            logger: logger
        )
        var result: [DeviceKey: [Notification]] = [:]
        for try await (appId, token, deliveryId, status, reason, at, received, opened) in rows.decode(
            (UUID, String, String, String, String?, Date, Bool, Bool).self)
        {
            result[DeviceKey(appId: appId, token: token), default: []].append(
                Notification(deliveryId: deliveryId, status: status, failureReason: reason, at: at, received: received, opened: opened))
        }
        return result
    }
}
