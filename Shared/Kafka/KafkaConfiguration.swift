/// Settings shared by producers, consumers and the admin client.
///
/// Every field maps onto a librdkafka property; `properties` passes anything else through
/// unchanged (for example `security.protocol`, `sasl.*`, `ssl.*`), and wins over the fields.
package struct KafkaClientConfiguration: Sendable, Hashable {
    /// Comma-separated `host:port` list (librdkafka `bootstrap.servers`).
    package var bootstrapServers: String
    /// Shown in broker logs and quotas (`client.id`).
    package var clientID: String
    /// Extra librdkafka properties, applied last.
    package var properties: [String: String]

    package init(bootstrapServers: String, clientID: String = "push-channel", properties: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.properties = properties
    }

    var baseProperties: [String: String] {
        [
            "bootstrap.servers": bootstrapServers,
            "client.id": clientID,
            // Surface "all brokers down" quickly as an error event instead of retrying silently.
            "socket.connection.setup.timeout.ms": "10000",
            // Topics come from the topic catalog (`pushctl topics create`); a misspelt name must
            // fail with UNKNOWN_TOPIC_OR_PART instead of silently creating a new topic.
            "allow.auto.create.topics": "false",
        ]
    }
}

/// Producer settings. Defaults follow `reference/event-sourcing.md`: idempotent, lz4, a small
/// linger so that many concurrent `send` calls share one request, and a bounded delivery timeout
/// so an awaited send always ends.
package struct KafkaProducerConfiguration: Sendable, Hashable {
    package var client: KafkaClientConfiguration
    /// `enable.idempotence` (implies `acks=all`, at most 5 requests in flight). Default `true`.
    package var idempotent: Bool
    /// `compression.type`. Default `lz4`.
    package var compression: String
    /// `linger.ms`: how long librdkafka waits to fill a batch. Default 5 ms.
    package var lingerMilliseconds: Int
    /// `message.timeout.ms`: a record not acknowledged by then fails with a retriable
    /// `deliveryTimedOut` error. Default 30 s.
    package var deliveryTimeoutMilliseconds: Int
    /// `partitioner`. Default `murmur2_random`, the Java client's, so upstream producers and ours
    /// put the same key in the same partition.
    package var partitioner: String
    /// How long `close()` waits for records still awaiting the broker before failing them.
    /// Default `nil`: the delivery timeout. Services set less, so a stop with the broker
    /// unreachable fits in their shutdown grace (their senders were never told the records
    /// were stored, so nothing acknowledged is lost).
    package var closeFlushTimeoutMilliseconds: Int?

    package init(
        client: KafkaClientConfiguration,
        idempotent: Bool = true,
        compression: String = "lz4",
        lingerMilliseconds: Int = 5,
        deliveryTimeoutMilliseconds: Int = 30_000,
        partitioner: String = "murmur2_random"
    ) {
        self.client = client
        self.idempotent = idempotent
        self.compression = compression
        self.lingerMilliseconds = lingerMilliseconds
        self.deliveryTimeoutMilliseconds = deliveryTimeoutMilliseconds
        self.partitioner = partitioner
    }

    /// What `close()` waits for undelivered records, at most the delivery timeout.
    var closeFlushMilliseconds: Int {
        min(closeFlushTimeoutMilliseconds ?? deliveryTimeoutMilliseconds, deliveryTimeoutMilliseconds)
    }

    var rdKafkaProperties: [String: String] {
        var properties = client.baseProperties
        properties["enable.idempotence"] = idempotent ? "true" : "false"
        properties["compression.type"] = compression
        properties["linger.ms"] = String(lingerMilliseconds)
        properties["message.timeout.ms"] = String(deliveryTimeoutMilliseconds)
        properties["partitioner"] = partitioner
        properties.merge(client.properties) { _, override in override }
        return properties
    }
}

/// Consumer-group settings.
///
/// Offsets are stored only when the application says a record is processed
/// (`enable.auto.offset.store=false`); stored offsets are committed in the background and on close.
package struct KafkaConsumerConfiguration: Sendable, Hashable {
    package var client: KafkaClientConfiguration
    /// `group.id`.
    package var groupID: String
    /// Topics to subscribe to.
    package var topics: [String]
    /// `partition.assignment.strategy`. Default `cooperative-sticky` (incremental rebalancing:
    /// a member joining or leaving moves only the partitions that must move).
    package var assignmentStrategy: String
    /// `auto.offset.reset` when neither the start-position provider nor the group has an offset.
    /// Default `earliest`: topics are the source of truth and a new projection replays them.
    package var offsetReset: String
    /// `session.timeout.ms`. Default 45 s (librdkafka's); tests use 6 s.
    package var sessionTimeoutMilliseconds: Int
    /// `heartbeat.interval.ms`. Default 3 s.
    package var heartbeatIntervalMilliseconds: Int
    /// `max.poll.interval.ms`: a member that does not ask for records for this long leaves the group.
    package var maxPollIntervalMilliseconds: Int
    /// `auto.commit.interval.ms`: how often stored offsets are committed. Default 1 s.
    package var commitIntervalMilliseconds: Int
    /// Records fetched per `batches` element at most. Default 500.
    package var maxBatchSize: Int
    /// How long `close()` lets a first join still in progress finish before leaving the group
    /// (see `KafkaConsumer.close()`). Default 10 s; services take a share of their shutdown grace.
    package var joinGraceOnCloseMilliseconds: Int = 10_000
    /// How long `close()` waits for the member to leave its group (librdkafka's close: the
    /// LeaveGroup and the revocation it serves). A close that runs into a rebalance in progress
    /// waits for the coordinator's answer to a join, up to the rebalance's own timeout. Past
    /// this, `close()` returns and librdkafka's close finishes on the consumer's thread by
    /// itself (or the process exits first: the partitions then move at the session timeout).
    /// Default 3 s; services take a share of their shutdown grace.
    package var leaveTimeoutMilliseconds: Int = 3_000
    /// How often `push_consumer_lag` is read from the broker (the partitions' high watermarks
    /// against what this member has read), so the gauge stays current while nothing is read: a
    /// stalled or paused reader shows its lag growing. Default 10 s.
    package var lagRefreshIntervalMilliseconds: Int = 10_000
    /// `queued.max.messages.kbytes`: the most record bytes librdkafka pre-fetches into this
    /// member's queue (one queue for all its partitions) ahead of the reader. Nil: librdkafka's
    /// 65,536 KiB, which a backlog fills. It also caps `fetch.max.bytes` (at least
    /// `message.max.bytes`, 1,000,000), so one fetch response never holds more.
    package var fetchQueueKilobytes: Int?
    /// `queued.min.messages`: pre-fetching goes on while the queue holds fewer records than this
    /// (and fewer bytes than `fetchQueueKilobytes`). Nil: librdkafka's 100,000.
    package var fetchQueueMinRecords: Int?

    package init(
        client: KafkaClientConfiguration,
        groupID: String,
        topics: [String],
        assignmentStrategy: String = "cooperative-sticky",
        offsetReset: String = "earliest",
        sessionTimeoutMilliseconds: Int = 45_000,
        heartbeatIntervalMilliseconds: Int = 3_000,
        maxPollIntervalMilliseconds: Int = 300_000,
        commitIntervalMilliseconds: Int = 1_000,
        maxBatchSize: Int = 500
    ) {
        self.client = client
        self.groupID = groupID
        self.topics = topics
        self.assignmentStrategy = assignmentStrategy
        self.offsetReset = offsetReset
        self.sessionTimeoutMilliseconds = sessionTimeoutMilliseconds
        self.heartbeatIntervalMilliseconds = heartbeatIntervalMilliseconds
        self.maxPollIntervalMilliseconds = maxPollIntervalMilliseconds
        self.commitIntervalMilliseconds = commitIntervalMilliseconds
        self.maxBatchSize = maxBatchSize
    }

    /// The librdkafka properties the consumer is created with.
    package var rdKafkaProperties: [String: String] {
        var properties = client.baseProperties
        properties["group.id"] = groupID
        properties["partition.assignment.strategy"] = assignmentStrategy
        properties["auto.offset.reset"] = offsetReset
        properties["enable.auto.offset.store"] = "false"
        properties["enable.auto.commit"] = "true"
        properties["auto.commit.interval.ms"] = String(commitIntervalMilliseconds)
        properties["session.timeout.ms"] = String(sessionTimeoutMilliseconds)
        properties["heartbeat.interval.ms"] = String(heartbeatIntervalMilliseconds)
        properties["max.poll.interval.ms"] = String(maxPollIntervalMilliseconds)
        properties["enable.partition.eof"] = "false"
        // librdkafka (>= 2.4) waits 1 s before fetching again once its local queue reached
        // `queued.min.messages`; a consumer that drains the queue in batches then sits idle for
        // most of that second (bench/kafka.sh: 169k records/s at 1000 ms, 678k at 10 ms).
        properties["fetch.queue.backoff.ms"] = "10"
        if let fetchQueueKilobytes { properties["queued.max.messages.kbytes"] = String(fetchQueueKilobytes) }
        if let fetchQueueMinRecords { properties["queued.min.messages"] = String(fetchQueueMinRecords) }
        properties.merge(client.properties) { _, override in override }
        return properties
    }
}
