import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// Devices as an operator looks them up (docs/admin-api.md, "Devices"): a person's or a token's
/// subscriptions in one service, their quarantine, their last messages; and lifting a quarantine
/// by hand, as a `SubscriptionReenabled` event so that a replay agrees.
package struct DeviceAdmin: Sendable {
    let producer: KafkaProducer
    /// `push.subscriptions`.
    let topic: String
    let postgres: PostgresClient
    let logger: Logger

    package init(producer: KafkaProducer, topic: String, postgres: PostgresClient, logger: Logger) {
        self.producer = producer
        self.topic = topic
        self.postgres = postgres
        self.logger = logger
    }

    package struct Device: Codable, Sendable, Equatable {
        package var appId: UUID
        package var integrationKey: String
        package var platform: String
        package var registrationToken: String
        package var userKey: String
        package var params: [String: String]
        package var deviceName: String?
        package var deviceModel: String?
        package var osName: String?
        package var osVersion: String?
        package var registeredAt: Date
        package var quarantine: Quarantine?
        /// When an operator unsubscribed the device (excluded from deliveries); absent while subscribed.
        package var unsubscribedAt: Date?
        /// The device's latest messages (`broad_log`), newest first, at most `messages`.
        package var lastMessages: [LoggedMessage]
    }

    /// Set when the subscription is disabled (quarantined).
    package struct Quarantine: Codable, Sendable, Equatable {
        /// The provider's reason (`Unregistered`, `UNREGISTERED`, …).
        package var reason: String?
        /// When this channel disabled the device (the purge counts from it).
        package var disabledAt: Date?
        /// The provider's own time for the token's invalidity, when it gave one.
        package var invalidSince: Date?
    }

    package struct LoggedMessage: Codable, Sendable, Equatable {
        package var deliveryId: String
        package var messageId: UUID
        package var broadLogId: Int32?
        package var status: String
        package var failureType: String?
        package var failureReason: String?
        package var createdAt: Date
        package var sentAt: Date?
    }

    /// Most messages per device a lookup may ask for.
    package static let maximumMessages = 50

    /// The service's subscriptions of `userKey`, or of `token` (exactly one of them).
    package func devices(serviceName: String, userKey: String?, token: String?, messages: Int) async throws -> [Device] {
        guard (userKey == nil) != (token == nil) else { throw AdminError.badRequest("give exactly one of userKey and token") }
        guard (0...Self.maximumMessages).contains(messages) else { throw AdminError.badRequest("messages must be between 0 and \(Self.maximumMessages)") }
        let services = try await postgres.query("SELECT service_id FROM push.services WHERE name = \(serviceName)", logger: logger)
        var serviceId: UUID?
        for try await id in services.decode(UUID.self) { serviceId = id }
        guard let serviceId else { throw AdminError.notFound("no service named \(serviceName)") }
        let rows = try await postgres.query(
            """
            SELECT s.app_id, a.integration_key, s.platform, s.registration_token, s.user_key, s.params::text, s.device_name, s.device_model,
                   s.os_name, s.os_version, s.registered_at, s.disabled, s.disabled_reason, s.disabled_at, s.invalid_since, s.unsubscribed_at
            FROM push.subscriptions s JOIN push.apps a USING (app_id)
            WHERE a.service_id = \(serviceId)
              AND (\(userKey)::text IS NULL OR s.user_key = \(userKey)) AND (\(token)::text IS NULL OR s.registration_token = \(token))
            ORDER BY s.registered_at DESC, s.app_id
            LIMIT 100
            """,
            logger: logger)
        var devices: [Device] = []
        for try await row in rows {
            let cells = row.makeRandomAccess()
            let params = (try? JSONDecoder().decode([String: String].self, from: Data(try cells[5].decode(String.self).utf8))) ?? [:]
            let disabled = try cells[11].decode(Bool.self)
            devices.append(
                Device(
                    appId: try cells[0].decode(UUID.self), integrationKey: try cells[1].decode(String.self), platform: try cells[2].decode(String.self),
                    registrationToken: try cells[3].decode(String.self), userKey: try cells[4].decode(String.self), params: params,
                    deviceName: try cells[6].decode(String?.self), deviceModel: try cells[7].decode(String?.self), osName: try cells[8].decode(String?.self),
                    osVersion: try cells[9].decode(String?.self), registeredAt: try cells[10].decode(Date.self),
                    quarantine: disabled
                        ? Quarantine(
                            reason: try cells[12].decode(String?.self), disabledAt: try cells[13].decode(Date?.self),
                            invalidSince: try cells[14].decode(Date?.self))
                        : nil,
                    unsubscribedAt: try cells[15].decode(Date?.self),
                    lastMessages: []))
        }
        guard messages > 0 else { return devices }
        for index in devices.indices {
            let logged = try await postgres.query(
                """
                SELECT delivery_id, message_id, broad_log_id, status, failure_type, failure_reason, created_at, sent_at
                FROM push.broad_log
                WHERE app_id = \(devices[index].appId) AND token_digest = push.token_digest(\(devices[index].registrationToken))
                ORDER BY created_at DESC
                LIMIT \(messages)
                """,
                logger: logger)
            for try await (delivery, message, broadLogId, status, type, reason, created, sent) in logged.decode(
                (String, UUID, Int32?, String, String?, String?, Date, Date?).self)
            {
                devices[index].lastMessages.append(
                    LoggedMessage(
                        deliveryId: delivery, messageId: message, broadLogId: broadLogId, status: status, failureType: type, failureReason: reason,
                        createdAt: created, sentAt: sent))
            }
        }
        return devices
    }

    /// The answer to a lift (200).
    package struct Lifted: Codable, Sendable, Equatable {
        package var appId: UUID
        package var registrationToken: String
        /// True once `push.subscriptions` shows the device enabled (the next deliveries target
        /// it); false if the projection did not apply the event within 5 s (it will).
        package var applied: Bool
    }

    /// Publishes `SubscriptionReenabled` for a quarantined subscription and waits (up to 5 s)
    /// until the projection enabled it. 404 for an unknown subscription, 409 for one not
    /// quarantined.
    package func liftQuarantine(appId: UUID, token: String) async throws -> Lifted {
        let rows = try await postgres.query(
            "SELECT disabled FROM push.subscriptions WHERE app_id = \(appId) AND registration_token = \(token)", logger: logger)
        var disabled: Bool?
        for try await value in rows.decode(Bool.self) { disabled = value }
        guard let disabled else { throw AdminError.notFound("no subscription of app \(appId) with this registrationToken") }
        guard disabled else { throw AdminError(status: 409, reason: "the subscription is not quarantined") }
        let digest = TokenDigest.of(token)
        let key = TokenDigest.subscriptionKey(appId: appId, tokenDigest: digest)
        let envelope = EventEnvelope(key: key, payload: SubscriptionReenabled(appId: appId, tokenDigest: digest))
        do {
            _ = try await producer.send(try KafkaProducerRecord(topic: topic, event: envelope))
        } catch let error as KafkaError {
            throw AdminError(status: 503, reason: "the broker did not store the change (\(error)); ask again")
        }
        logger.notice("Quarantine lifted by an operator", metadata: ["app": "\(appId)"])
        let logger = logger
        let applied = try await ProjectionWait.subscriptions.until(timeout: .seconds(5), postgres: postgres, logger: logger) { connection in
            let state = try await connection.query(
                "SELECT disabled FROM push.subscriptions WHERE app_id = \(appId) AND registration_token = \(token)", logger: logger)
            for try await stillDisabled in state.decode(Bool.self) where !stillDisabled { return true }
            return false
        }
        return Lifted(appId: appId, registrationToken: token, applied: applied)
    }

    /// The answer to an unsubscribe or a resubscribe (200).
    package struct SubscriptionChange: Codable, Sendable, Equatable {
        package struct Subscription: Codable, Sendable, Equatable {
            package var appId: UUID
            package var registrationToken: String
        }
        /// The subscriptions whose state changed (one event each); those already in the asked
        /// state are left alone and not listed.
        package var changed: [Subscription]
        /// True once `push.subscriptions` shows every change; false if the projection did not
        /// apply them within 5 s (it will).
        package var applied: Bool
    }

    /// Unsubscribes (`subscribe` false) or subscribes again the service's subscriptions of
    /// `userKey` or of `token` (exactly one): one `SubscriptionUnsubscribed` or
    /// `SubscriptionResubscribed` per subscription whose state changes, keyed by the device, so a
    /// replay agrees. Waits (up to 5 s) until the projection shows them. 404 for an unknown
    /// service or when the service has no such subscription.
    package func setSubscribed(_ subscribe: Bool, serviceName: String, userKey: String?, token: String?) async throws -> SubscriptionChange {
        guard (userKey == nil) != (token == nil) else { throw AdminError.badRequest("give exactly one of userKey and registrationToken") }
        if let userKey, userKey.isEmpty { throw AdminError.badRequest("userKey must not be empty") }
        if let token, token.isEmpty { throw AdminError.badRequest("registrationToken must not be empty") }
        let services = try await postgres.query("SELECT service_id FROM push.services WHERE name = \(serviceName)", logger: logger)
        var serviceId: UUID?
        for try await id in services.decode(UUID.self) { serviceId = id }
        guard let serviceId else { throw AdminError.notFound("no service named \(serviceName)") }
        let rows = try await postgres.query(
            """
            SELECT s.app_id, s.registration_token, s.unsubscribed_at IS NOT NULL
            FROM push.subscriptions s JOIN push.apps a USING (app_id)
            WHERE a.service_id = \(serviceId)
              AND (\(userKey)::text IS NULL OR s.user_key = \(userKey)) AND (\(token)::text IS NULL OR s.registration_token = \(token))
            ORDER BY s.app_id, s.registration_token
            """,
            logger: logger)
        var found = 0
        var changed: [SubscriptionChange.Subscription] = []
        for try await (appId, registrationToken, unsubscribed) in rows.decode((UUID, String, Bool).self) {
            found += 1
            if unsubscribed == subscribe { changed.append(.init(appId: appId, registrationToken: registrationToken)) }
        }
        guard found > 0 else {
            throw AdminError.notFound(
                userKey != nil
                    ? "no subscription of this userKey in service \(serviceName)" : "no subscription with this registrationToken in service \(serviceName)")
        }
        var records: [KafkaProducerRecord] = []
        for subscription in changed {
            // Named by the token's digest, never the token (docs/architecture.md, "Erasure").
            let digest = PersonalDataKeys.tokenDigest(subscription.registrationToken)
            let key = SealedSubscriptionRegistered.key(appId: subscription.appId, tokenDigest: digest)
            records.append(
                subscribe
                    ? try KafkaProducerRecord(
                        topic: topic, event: EventEnvelope(key: key, payload: SubscriptionResubscribed(appId: subscription.appId, tokenDigest: digest)))
                    : try KafkaProducerRecord(
                        topic: topic, event: EventEnvelope(key: key, payload: SubscriptionUnsubscribed(appId: subscription.appId, tokenDigest: digest))))
        }
        for result in await producer.send(records) {
            do {
                _ = try result.get()
            } catch {
                throw AdminError(status: 503, reason: "the broker did not store the change (\(error)); ask again")
            }
        }
        logger.notice(
            subscribe ? "Devices subscribed again by an operator" : "Devices unsubscribed by an operator",
            metadata: ["service": "\(serviceName)", "count": "\(changed.count)"])
        guard !changed.isEmpty else { return SubscriptionChange(changed: [], applied: true) }
        let logger = logger
        let (appIds, tokens) = (changed.map(\.appId), changed.map(\.registrationToken))
        let applied = try await ProjectionWait.subscriptions.until(timeout: .seconds(5), postgres: postgres, logger: logger) { connection in
            let state = try await connection.query(
                """
                SELECT count(*)::int FROM push.subscriptions
                WHERE (app_id, registration_token) IN (SELECT * FROM unnest(\(appIds)::uuid[], \(tokens)::text[]))
                  AND (unsubscribed_at IS NULL) = \(subscribe)
                """,
                logger: logger)
            for try await done in state.decode(Int.self) where done == appIds.count { return true }
            return false
        }
        return SubscriptionChange(changed: changed, applied: applied)
    }
}
