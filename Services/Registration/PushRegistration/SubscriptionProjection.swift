import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// Keeps `push.subscriptions` from `push.subscriptions`: one row per app + token; and reads
/// `push.catalog` for the apps deleted.
///
/// - `SubscriptionRegistered` upserts the row and clears a quarantine, unless its app was deleted,
///   the device was erased after it (`push.erased_devices`), or a later registration of the
///   device is already there (version-1 and version-2 events of one device sit in different
///   partitions, keyed by token and by digest, so a replay may read them out of order). Version 2
///   is opened with its subject's data key (`push.subject_keys`, read once per batch); without
///   the key (the person was erased) it is skipped.
/// - `SubscriptionDisabled` sets `disabled` unless the device registered again after the
///   provider's verdict (`invalidSince` older than `registered_at`); `disabled_at` is when the
///   channel disabled it (the event's `occurredAt`, so a replay gives the same row), the
///   provider's own time is `invalid_since`.
/// - `SubscriptionReenabled` (an operator lifted the quarantine) clears `disabled` and its
///   reason and times.
/// - `SubscriptionUnsubscribed` sets `unsubscribed_at` (the event's `occurredAt`);
///   `SubscriptionResubscribed` clears it. A registration leaves it as it is: an unsubscribed
///   device that the SDK registers again stays unsubscribed.
/// - `SubscriptionPurged` deletes a disabled row.
/// - The quarantine events (`SubscriptionDisabled`, `SubscriptionReenabled`, `SubscriptionPurged`)
///   name the device by token digest since version 2; version 1 (the token in clear) is upcast
///   to version 2 on reading, so every device event matches `push.subscriptions.token_digest`.
/// - `AppDeleted` (on `push.catalog`) deletes the app's rows and records the app in
///   `push.subscription_deleted_apps`, this projection's own record, written in its transaction:
///   a registration of the app read afterwards (published before the deletion reached every
///   registration instance, or simply read later because the two topics are not read in step) is
///   ignored. Whatever the interleaving of the two topics, live or replayed, a deleted app ends
///   with no rows. Other catalog events are not this projection's and are skipped.
package struct SubscriptionProjection: EnvelopeProjection {
    package enum Event: Sendable {
        case registered(SubscriptionRegistered)
        case sealed(SealedSubscriptionRegistered)
        case disabled(SubscriptionDisabled, Date)
        case purged(SubscriptionPurged)
        case reenabled(SubscriptionReenabled)
        case unsubscribed(SubscriptionUnsubscribed, Date)
        case resubscribed(SubscriptionResubscribed)
        case appDeleted(AppDeleted, Date)
    }

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<Event>
    let catalogTopic: String
    /// Opens the data keys the sealed registrations name (`PUSH_DATA_KEYS_KEY`).
    let wrapping: (any DataKeyWrapping)?
    /// Up to 5,000 records a batch (the consumer's default is 500): consecutive registrations
    /// are one `COPY` and one merge, paid per batch (a replay, a registration burst).
    package var batchSize: Int? { 5_000 }

    /// `topic` is `push.subscriptions`, `catalogTopic` `push.catalog` (read for `AppDeleted`).
    package init(name: String = "push-subscriptions-projection", topic: String, catalogTopic: String, wrapping: (any DataKeyWrapping)?) {
        self.name = name
        self.wrapping = wrapping
        self.topics = [topic, catalogTopic]
        self.catalogTopic = catalogTopic
        var decoder = EventDecoder<Event>()
        decoder.register(SubscriptionRegistered.self) { event, _ in .registered(event) }
        decoder.register(SealedSubscriptionRegistered.self) { event, _ in .sealed(event) }
        decoder.register(SubscriptionDisabled.self) { event, metadata in .disabled(event, metadata.occurredAt) }
        decoder.register(SubscriptionDisabledV1.self) { event, metadata in .disabled(event.upcast, metadata.occurredAt) }
        decoder.register(SubscriptionPurged.self) { event, _ in .purged(event) }
        decoder.register(SubscriptionPurgedV1.self) { event, _ in .purged(event.upcast) }
        decoder.register(SubscriptionReenabled.self) { event, _ in .reenabled(event) }
        decoder.register(SubscriptionReenabledV1.self) { event, _ in .reenabled(event.upcast) }
        decoder.register(SubscriptionUnsubscribed.self) { event, metadata in .unsubscribed(event, metadata.occurredAt) }
        decoder.register(SubscriptionResubscribed.self) { event, _ in .resubscribed(event) }
        decoder.register(AppDeleted.self) { event, metadata in .appDeleted(event, metadata.occurredAt) }
        self.decoder = decoder
    }

    /// Records of `push.subscriptions` as every envelope projection reads them (a malformed one
    /// is dead-lettered). A `push.catalog` record this projection cannot read is skipped: the
    /// catalog projection dead-letters it, once, and neither applies it.
    package func decode(_ record: KafkaConsumerRecord) throws -> Event? {
        let decoded: DecodedEvent<Event>
        do {
            decoded = try decoder.decode(record.value)
        } catch {
            if record.topic == catalogTopic { return nil }
            throw error
        }
        switch decoded {
        case .known(let event, _): return event
        case .unknown: return nil
        }
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        // Delivered on commit: an operator's unsubscribe or quarantine lift waits for it
        // (`DeviceAdmin`).
        if !events.isEmpty { try await ProjectionWait.subscriptions.notify(on: connection, logger: logger) }
        // Consecutive registrations are written with one COPY and one statement (the last per
        // key wins, as they replace the whole row); other events keep their place in the order.
        var pending: [String: SubscriptionRegistered] = [:]
        var order: [String] = []
        let subjects = Set(events.compactMap { if case .sealed(let sealed) = $0.event { sealed.subjectId } else { nil } })
        let keys = try await PersonalDataKeys.keys(subjects, wrapping: wrapping, on: connection, logger: logger)
        // The devices each subject registered, kept past a purge or an app's deletion, so that
        // an erasure of the person still finds their log rows (`push.subject_devices`).
        var devices: [(subjectId: UUID, appId: UUID, tokenDigest: String)] = []
        func flush() async throws {
            guard !order.isEmpty else { return }
            try await Self.upsert(order.map { pending[$0]! }, on: connection, logger: logger)
            pending = [:]
            order = []
        }
        for projected in events {
            switch projected.event {
            case .sealed(let sealed):
                guard let key = keys[sealed.subjectId], let registration = PersonalDataKeys.open(sealed, key: key) else {
                    logger.debug("Registration of an erased subject skipped", metadata: ["app.id": "\(sealed.appId)"])
                    continue
                }
                let recordKey = SubscriptionRegistered.key(appId: registration.appId, registrationToken: registration.registrationToken)
                if pending.updateValue(registration, forKey: recordKey) == nil { order.append(recordKey) }
                devices.append((sealed.subjectId, sealed.appId, sealed.tokenDigest))
            case .registered(let registration):
                let key = SubscriptionRegistered.key(appId: registration.appId, registrationToken: registration.registrationToken)
                if pending.updateValue(registration, forKey: key) == nil { order.append(key) }
            case .disabled(let disabled, let at):
                try await flush()
                try await connection.query(
                    """
                    UPDATE push.subscriptions
                    SET disabled = true, disabled_reason = \(disabled.reason), disabled_at = \(at), invalid_since = \(disabled.invalidSince),
                        updated_at = now()
                    WHERE app_id = \(disabled.appId) AND token_digest = \(disabled.tokenDigest)
                      AND registered_at <= \(disabled.invalidSince)
                    """,
                    logger: logger
                )
            case .reenabled(let reenabled):
                try await flush()
                try await connection.query(
                    """
                    UPDATE push.subscriptions
                    SET disabled = false, disabled_reason = NULL, disabled_at = NULL, invalid_since = NULL, updated_at = now()
                    WHERE app_id = \(reenabled.appId) AND token_digest = \(reenabled.tokenDigest) AND disabled
                    """,
                    logger: logger
                )
            case .unsubscribed(let unsubscribed, let at):
                try await flush()
                try await connection.query(
                    """
                    UPDATE push.subscriptions SET unsubscribed_at = \(at), updated_at = now()
                    WHERE app_id = \(unsubscribed.appId) AND token_digest = \(unsubscribed.tokenDigest) AND unsubscribed_at IS NULL
                    """,
                    logger: logger
                )
            case .resubscribed(let resubscribed):
                try await flush()
                try await connection.query(
                    """
                    UPDATE push.subscriptions SET unsubscribed_at = NULL, updated_at = now()
                    WHERE app_id = \(resubscribed.appId) AND token_digest = \(resubscribed.tokenDigest) AND unsubscribed_at IS NOT NULL
                    """,
                    logger: logger
                )
            case .purged(let purged):
                try await flush()
                try await connection.query(
                    "DELETE FROM push.subscriptions WHERE app_id = \(purged.appId) AND token_digest = \(purged.tokenDigest) AND disabled",
                    logger: logger
                )
            case .appDeleted(let deleted, let at):
                try await flush()
                try await connection.query(
                    "INSERT INTO push.subscription_deleted_apps (app_id, deleted_at) VALUES (\(deleted.appId), \(at)) ON CONFLICT (app_id) DO NOTHING",
                    logger: logger
                )
                try await connection.query("DELETE FROM push.subscriptions WHERE app_id = \(deleted.appId)", logger: logger)
            }
        }
        try await flush()
        if !devices.isEmpty {
            try await connection.query(
                """
                INSERT INTO push.subject_devices (subject_id, app_id, token_digest)
                SELECT * FROM unnest(\(devices.map(\.subjectId))::uuid[], \(devices.map(\.appId))::uuid[], \(devices.map(\.tokenDigest))::text[])
                ON CONFLICT DO NOTHING
                """,
                logger: logger)
        }
    }

    /// The registrations are copied into this connection's staging table (COPY, no parameters
    /// per row), then merged by one statement that empties the staging table as it reads it (a
    /// batch flushes several times between its other events, in one transaction).
    static func upsert(_ registrations: [SubscriptionRegistered], on connection: PostgresConnection, logger: Logger) async throws {
        var rows = CopyTextRows(capacity: registrations.count * 400)
        for registration in registrations {
            rows.uuid(registration.appId)
            rows.text(registration.registrationToken)
            rows.text(registration.platform.rawValue)
            rows.text(registration.userKey)
            rows.text(registration.deviceImei.flatMap { $0.isEmpty ? nil : $0 })
            rows.text(registration.deviceName)
            rows.text(registration.deviceModel)
            rows.text(registration.deviceBrand)
            rows.text(registration.deviceManufacturer)
            rows.text(registration.osName)
            rows.text(registration.osVersion)
            rows.text(registration.osLanguage)
            rows.jsonObject(registration.params)
            rows.timestamp(registration.registeredAt)
            rows.endRow()
        }
        try await connection.stage(
            rows, into: "subscriptions_stage",
            definition: """
                app_id uuid, registration_token text, platform text, user_key text, device_imei text, device_name text, device_model text,
                device_brand text, device_manufacturer text, os_name text, os_version text, os_language text, params jsonb,
                registered_at timestamptz
                """,
            columns: [
                "app_id", "registration_token", "platform", "user_key", "device_imei", "device_name", "device_model", "device_brand",
                "device_manufacturer", "os_name", "os_version", "os_language", "params", "registered_at",
            ], logger: logger)
        try await connection.query(
            """
            WITH x AS (DELETE FROM subscriptions_stage RETURNING *)
            INSERT INTO push.subscriptions AS s (
                app_id, registration_token, platform, user_key, device_imei, device_name, device_model, device_brand,
                device_manufacturer, os_name, os_version, os_language, params, registered_at, updated_at)
            SELECT app_id, registration_token, platform, user_key, device_imei, device_name, device_model, device_brand,
                device_manufacturer, os_name, os_version, os_language, params, registered_at, now()
            FROM x
            WHERE NOT EXISTS (SELECT 1 FROM push.subscription_deleted_apps d WHERE d.app_id = x.app_id)
              AND NOT EXISTS (
                  SELECT 1 FROM push.erased_devices e
                  WHERE e.app_id = x.app_id AND e.token_digest = push.token_digest(x.registration_token) AND x.registered_at <= e.erased_at)
            ON CONFLICT (app_id, registration_token) DO UPDATE SET
                platform = excluded.platform, user_key = excluded.user_key, device_imei = excluded.device_imei,
                device_name = excluded.device_name, device_model = excluded.device_model, device_brand = excluded.device_brand,
                device_manufacturer = excluded.device_manufacturer, os_name = excluded.os_name, os_version = excluded.os_version,
                os_language = excluded.os_language, params = excluded.params,
                disabled = false, disabled_reason = NULL, disabled_at = NULL, invalid_since = NULL,
                registered_at = excluded.registered_at, updated_at = now()
            WHERE s.registered_at <= excluded.registered_at
            """,
            logger: logger
        )
    }
}
