/// One Kafka topic of the system: its name and how it is created.
package struct TopicDefinition: Sendable, Hashable {
    /// A stable identifier used in configuration keys, such as `DELIVERY_REQUESTS`.
    package var id: String
    package var name: String
    package var partitions: Int
    /// `retention.ms`; -1 keeps every record (docs/events.md, "Retention", says why per topic).
    package var retentionMilliseconds: Int64
    package var purpose: String

    /// Topic-level settings passed to the broker at creation (`pushctl topics create`);
    /// `pushctl topics apply-retention` brings `retention.ms` of existing topics to this value.
    package var config: [String: String] {
        ["retention.ms": String(retentionMilliseconds), "cleanup.policy": "delete"]
    }
}

/// Every topic the services use, in one place.
///
/// Names and partition counts have defaults (docs/events.md, "Topic catalog") and can be changed per deployment
/// with `PUSH_TOPIC_<ID>` (name) and `PUSH_TOPIC_<ID>_PARTITIONS`. Partition counts are sized up
/// front: adding partitions later moves keys to other partitions and breaks per-key order.
package struct TopicCatalog: Sendable, Hashable {
    package var subscriptions: TopicDefinition
    package var catalog: TopicDefinition
    package var deliveryRequests: TopicDefinition
    package var deliveryRequestsDLQ: TopicDefinition
    package var deliveryEvents: TopicDefinition
    package var apnsMessages: TopicDefinition
    package var fcmMessages: TopicDefinition
    /// Messages a sender will try again later (same record with `attempt` + 1 and `notBefore`).
    package var apnsRetries: TopicDefinition
    package var fcmRetries: TopicDefinition
    /// The transactional lane (`DeliveryPriority.transactional`): message and retry topics of
    /// their own, read by the senders' transactional consumers, so that no bulk backlog is
    /// ever in front of these messages (docs/senders.md, "Lanes").
    package var apnsTransactionalMessages: TopicDefinition
    package var fcmTransactionalMessages: TopicDefinition
    package var apnsTransactionalRetries: TopicDefinition
    package var fcmTransactionalRetries: TopicDefinition
    /// Messages a sender set aside until their throttle slot (both lanes'): read by a consumer
    /// of their own with a budget of its own (`<PREFIX>_MAX_HELD_THROTTLED`), so that a throttled
    /// backlog never holds the message and retry topics' reading up (docs/senders.md, "Throttle").
    package var apnsThrottled: TopicDefinition
    package var fcmThrottled: TopicDefinition
    package var messageResults: TopicDefinition
    package var tracking: TopicDefinition
    /// Who did what through the admin APIs (`AdminActionRecorded`): projected to
    /// `push.audit_log` (docs/admin-api.md, "Audit trail").
    package var audit: TopicDefinition
    /// Where any consumer sends a record it cannot read (one dead-letter topic per source topic
    /// is the convention `<topic>.dlq`; `dlq(for:)` names it).
    package var deadLetters: [TopicDefinition]

    package static let forever: Int64 = -1
    static let dayMilliseconds: Int64 = 24 * 3600 * 1000
    static let thirtyDays: Int64 = 30 * dayMilliseconds
    /// Message and retry records: a message is worth sending until its `validUntil`, at most 28
    /// days after it was planned (FCM's longest TTL, enforced by the planner), and a sender reads
    /// even an expired record to publish its `MessageExpired`. The 7 days beyond cover a sender
    /// group stopped that long; a record older than that is deleted unread and its message stays
    /// `pending` in `broad_log`.
    package static let messageRetention: Int64 = (28 + 7) * dayMilliseconds
    /// Upstream requests: read once by the planner, which keeps each accepted delivery in its own
    /// state and on `push.delivery-events`; nothing is rebuilt from them, and a request older
    /// than the longest validity can no longer send anything. Bounded like the message topics,
    /// so the user keys and tokens upstream wrote in clear do not outlive a person's erasure by
    /// more than 35 days (docs/operations.md, "Data protection").
    package static let requestRetention: Int64 = messageRetention

    /// - Parameters:
    ///   - resultsRetentionDays: `PUSH_RESULTS_RETENTION_DAYS` for `push.message-results`; 0 keeps
    ///     every record.
    ///   - trackingRetentionDays: `PUSH_TRACKING_RETENTION_DAYS` for `push.tracking`; 0 keeps
    ///     every record.
    package init(environment: [String: String] = [:], resultsRetentionDays: Int = 0, trackingRetentionDays: Int = 0) {
        func days(_ count: Int) -> Int64 { count > 0 ? Int64(count) * Self.dayMilliseconds : Self.forever }
        func topic(_ id: String, _ name: String, partitions: Int, retention: Int64 = Self.forever, _ purpose: String) -> TopicDefinition {
            TopicDefinition(
                id: id,
                name: environment["PUSH_TOPIC_\(id)"] ?? name,
                partitions: environment["PUSH_TOPIC_\(id)_PARTITIONS"].flatMap(Int.init) ?? partitions,
                retentionMilliseconds: retention,
                purpose: purpose
            )
        }
        subscriptions = topic(
            "SUBSCRIPTIONS", "push.subscriptions", partitions: 12, "registrations, re-registrations and quarantines of devices; key = app + token digest")
        catalog = topic(
            "CATALOG", "push.catalog", partitions: 1,
            "services, apps and provider credentials (references, never secrets); one partition keeps admin changes in order")
        deliveryRequests = topic(
            "DELIVERY_REQUESTS", "push.delivery-requests", partitions: 6, retention: Self.requestRetention,
            "upstream delivery requests (versioned contract); key = requestId")
        deliveryRequestsDLQ = topic(
            "DELIVERY_REQUESTS_DLQ", "push.delivery-requests.dlq", partitions: 1, retention: Self.thirtyDays,
            "delivery requests that could not be read or were invalid, with the reason in headers")
        deliveryEvents = topic(
            "DELIVERY_EVENTS", "push.delivery-events", partitions: 6,
            "delivery lifecycle: accepted, rejected, targeted, exclusions, completed; key = delivery id")
        apnsMessages = topic(
            "APNS_MESSAGES", "push.apns.messages", partitions: 24, retention: Self.messageRetention,
            "one record per iOS device to send; key = app + token digest (one device's messages in order)")
        fcmMessages = topic(
            "FCM_MESSAGES", "push.fcm.messages", partitions: 24, retention: Self.messageRetention,
            "one record per Android device to send; key = app + token digest")
        apnsRetries = topic(
            "APNS_RETRIES", "push.apns.retries", partitions: 12, retention: Self.messageRetention,
            "iOS messages waiting for another attempt after a transient APNs error; notBefore in the record; key = app + token digest")
        fcmRetries = topic(
            "FCM_RETRIES", "push.fcm.retries", partitions: 12, retention: Self.messageRetention,
            "Android messages waiting for another attempt after a transient FCM error; key = app + token digest")
        apnsTransactionalMessages = topic(
            "APNS_TRANSACTIONAL_MESSAGES", "push.apns.transactional.messages", partitions: 6, retention: Self.messageRetention,
            "iOS messages of transactional deliveries (their own lane, read first by the apns-sender); key = app + token digest")
        fcmTransactionalMessages = topic(
            "FCM_TRANSACTIONAL_MESSAGES", "push.fcm.transactional.messages", partitions: 6, retention: Self.messageRetention,
            "Android messages of transactional deliveries (their own lane, read first by the fcm-sender); key = app + token digest")
        apnsTransactionalRetries = topic(
            "APNS_TRANSACTIONAL_RETRIES", "push.apns.transactional.retries", partitions: 3, retention: Self.messageRetention,
            "iOS transactional messages waiting for another attempt; key = app + token digest")
        fcmTransactionalRetries = topic(
            "FCM_TRANSACTIONAL_RETRIES", "push.fcm.transactional.retries", partitions: 3, retention: Self.messageRetention,
            "Android transactional messages waiting for another attempt; key = app + token digest")
        apnsThrottled = topic(
            "APNS_THROTTLED", "push.apns.throttled", partitions: 12, retention: Self.messageRetention,
            "iOS messages of throttled deliveries set aside until their send slot (notBefore, header push-throttle-slot); key = app + token digest")
        fcmThrottled = topic(
            "FCM_THROTTLED", "push.fcm.throttled", partitions: 12, retention: Self.messageRetention,
            "Android messages of throttled deliveries set aside until their send slot; key = app + token digest")
        messageResults = topic(
            "MESSAGE_RESULTS", "push.message-results", partitions: 12, retention: days(resultsRetentionDays),
            "provider outcomes per message: sent, failed (hard/soft/ignored), expired; key = message id")
        tracking = topic(
            "TRACKING", "push.tracking", partitions: 12, retention: days(trackingRetentionDays), "impressions and opens from the tracking URL; key = message id"
        )
        audit = topic(
            "AUDIT", "push.audit", partitions: 1,
            "who did what through the admin APIs: operator, role, action, route, outcome (never a secret, a token or a query); kept forever")
        let consumed = [
            subscriptions, catalog, deliveryEvents, apnsMessages, fcmMessages, apnsRetries, fcmRetries, apnsTransactionalMessages, fcmTransactionalMessages,
            apnsTransactionalRetries, fcmTransactionalRetries, apnsThrottled, fcmThrottled, messageResults, tracking, audit,
        ]
        deadLetters = consumed.map { source in
            topic(
                "\(source.id)_DLQ", "\(source.name).dlq", partitions: 1, retention: Self.thirtyDays,
                "records of \(source.name) that a consumer could not read, with the reason in headers")
        }
    }

    /// Every topic, for creation and documentation.
    package var all: [TopicDefinition] {
        [
            subscriptions, catalog, deliveryRequests, deliveryRequestsDLQ, deliveryEvents, apnsMessages, fcmMessages, apnsRetries, fcmRetries,
            apnsTransactionalMessages, fcmTransactionalMessages, apnsTransactionalRetries, fcmTransactionalRetries, apnsThrottled, fcmThrottled,
            messageResults, tracking, audit,
        ] + deadLetters
    }

    /// The topic the planner publishes a `platform` message of a `lane` delivery on.
    package func messages(_ platform: Platform, lane: DeliveryPriority) -> TopicDefinition {
        switch (platform, lane) {
        case (.ios, .bulk): apnsMessages
        case (.android, .bulk): fcmMessages
        case (.ios, .transactional): apnsTransactionalMessages
        case (.android, .transactional): fcmTransactionalMessages
        }
    }

    /// Every message topic of both lanes (what the broad log reads).
    package var messageTopics: [TopicDefinition] {
        [apnsMessages, fcmMessages, apnsTransactionalMessages, fcmTransactionalMessages]
    }

    /// The dead-letter topic for records of `topic`.
    package func dlq(for topic: String) -> String {
        if topic == deliveryRequests.name { return deliveryRequestsDLQ.name }
        return all.first { $0.name == "\(topic).dlq" }?.name ?? "\(topic).dlq"
    }
}
