import Kafka
import PushEvents
import PushRuntime

/// What one `MessageSender` of a sender process reads (docs/senders.md, "Lanes"): the metrics'
/// and logs' label `lane`.
package enum SenderLane: String, Sendable, Hashable {
    /// `push.<p>.transactional.messages` and `.retries`.
    case transactional
    /// `push.<p>.messages` and `.retries`.
    case bulk
    /// `push.<p>.throttled`: both lanes' messages set aside until their throttle slot.
    case throttled
}

/// One sender's settings, read from `<PREFIX>_*` variables (`APNS_SENDER_*`, `FCM_SENDER_*`;
/// docs/configuration.md). The two senders share the shape and differ in defaults.
package struct SenderSettings: Sendable, Hashable {
    /// Consumer group of the sender instances (`<PREFIX>_GROUP`): instances with the same group
    /// share the partitions of the message and retry topics.
    package var group: String
    /// Sends in flight per instance (`<PREFIX>_MAX_IN_FLIGHT`), over all connections.
    package var maxInFlight: Int
    /// Records read but not finished per instance (`<PREFIX>_MAX_HELD`): in flight, waiting for a
    /// retry time, or done but behind an unfinished one in their partition. Bounds memory and the
    /// records a SIGKILL may re-send.
    package var maxHeld: Int
    /// First retry delay (`<PREFIX>_RETRY_BASE_MS`); doubles per attempt, with jitter.
    package var retryBaseMilliseconds: Int
    /// Longest computed retry delay (`<PREFIX>_RETRY_MAX_MS`); a provider's Retry-After may ask for more.
    package var retryMaxMilliseconds: Int
    /// How long a credential the provider refused is left alone (`<PREFIX>_CREDENTIAL_COOLDOWN_MS`):
    /// its messages wait (until their `validUntil`) instead of all failing.
    package var credentialCooldownMilliseconds: Int
    /// How long an app's active credential is cached (`<PREFIX>_CREDENTIAL_CACHE_MS`): a rotation
    /// reaches the senders within this time.
    package var credentialCacheMilliseconds: Int
    /// How often finished records' offsets are committed (`<PREFIX>_COMMIT_INTERVAL_MS`): after a
    /// SIGKILL, the records finished within the last interval are sent again.
    package var commitIntervalMilliseconds: Int = 100
    /// How often `push.delivery_controls` is read for deliveries cancelled, paused or resumed
    /// (`<PREFIX>_CONTROLS_REFRESH_MS`): the longest a control takes to reach this instance.
    package var controlsRefreshMilliseconds: Int = 500
    /// How long a paused delivery's message is set aside (on the retry topic) before it is looked
    /// at again (`<PREFIX>_PAUSE_RECHECK_MS`): a resume reaches waiting messages within this time.
    package var pauseRecheckMilliseconds: Int = 5_000
    /// The lane this instance's `MessageSender` reads (set by `transactionalLane`).
    package var lane: SenderLane = .bulk
    /// Consumer group of the transactional lane's consumers (`<PREFIX>_TRANSACTIONAL_GROUP`,
    /// default `<group>.transactional`): a group of its own, so that its partitions are never
    /// behind a bulk backlog in one consumer's fetch queue.
    package var transactionalGroup: String?
    /// Sends in flight of the transactional lane per instance (`<PREFIX>_TRANSACTIONAL_MAX_IN_FLIGHT`),
    /// over connections of its own: a budget bulk sends cannot take.
    package var transactionalMaxInFlight: Int = 50
    /// Records held by the transactional lane per instance (`<PREFIX>_TRANSACTIONAL_MAX_HELD`).
    package var transactionalMaxHeld: Int = 1_000
    /// KiB of records each lane's consumer pre-fetches ahead of the reader
    /// (`<PREFIX>_FETCH_QUEUE_KB`, librdkafka `queued.max.messages.kbytes`, one queue for all
    /// the lane's partitions; it also caps a fetch response, at least 1,000,000 bytes).
    /// librdkafka's own 65,536 KiB (and 100,000 records) held a backlog's first 64 MiB and more
    /// in memory (docs/senders.md, "Memory").
    package var fetchQueueKilobytes: Int = 2_048
    /// Records of the throttled topic held per instance (`<PREFIX>_MAX_HELD_THROTTLED`): waiting
    /// for their slot, in flight or publishing. When reached, only the throttled topic's reading
    /// pauses; it goes on as records are sent (their slots come in about the order they were
    /// set aside).
    package var throttledMaxHeld: Int = 1_000
    /// How long a stopping sender waits for the answers to its sends in flight. Not a variable of
    /// its own: the senders take half of `PUSH_SHUTDOWN_GRACE_MS` (3.5 s by default), so that a
    /// provider answering slowly (a request may take up to its 30 s timeout) cannot hold the stop
    /// past the grace. The sends still unanswered then are not finished: their records are read
    /// again by the partitions' next owner, like those a SIGKILL leaves (`maxHeld` bounds them).
    package var answersOnStopMilliseconds: Int = 3_500

    package init(
        group: String, maxInFlight: Int, maxHeld: Int = 5_000, retryBaseMilliseconds: Int = 1_000,
        retryMaxMilliseconds: Int = 300_000, credentialCooldownMilliseconds: Int = 60_000, credentialCacheMilliseconds: Int = 30_000
    ) {
        self.group = group
        self.maxInFlight = maxInFlight
        self.maxHeld = maxHeld
        self.retryBaseMilliseconds = retryBaseMilliseconds
        self.retryMaxMilliseconds = retryMaxMilliseconds
        self.credentialCooldownMilliseconds = credentialCooldownMilliseconds
        self.credentialCacheMilliseconds = credentialCacheMilliseconds
    }

    package init(prefix: String, defaults: SenderSettings, environment: EnvironmentSettings) throws {
        self = defaults
        group = environment.string("\(prefix)_GROUP", default: defaults.group)
        maxInFlight = try environment.int("\(prefix)_MAX_IN_FLIGHT", default: defaults.maxInFlight, in: 1...100_000)
        maxHeld = try environment.int("\(prefix)_MAX_HELD", default: max(defaults.maxHeld, maxInFlight), in: maxInFlight...1_000_000)
        retryBaseMilliseconds = try environment.int("\(prefix)_RETRY_BASE_MS", default: defaults.retryBaseMilliseconds, in: 10...600_000)
        retryMaxMilliseconds = try environment.int("\(prefix)_RETRY_MAX_MS", default: defaults.retryMaxMilliseconds, in: retryBaseMilliseconds...3_600_000)
        credentialCooldownMilliseconds = try environment.int(
            "\(prefix)_CREDENTIAL_COOLDOWN_MS", default: defaults.credentialCooldownMilliseconds, in: 100...3_600_000)
        credentialCacheMilliseconds = try environment.int("\(prefix)_CREDENTIAL_CACHE_MS", default: defaults.credentialCacheMilliseconds, in: 0...3_600_000)
        commitIntervalMilliseconds = try environment.int("\(prefix)_COMMIT_INTERVAL_MS", default: defaults.commitIntervalMilliseconds, in: 10...60_000)
        controlsRefreshMilliseconds = try environment.int(
            "\(prefix)_CONTROLS_REFRESH_MS", default: defaults.controlsRefreshMilliseconds, in: 50...60_000)
        pauseRecheckMilliseconds = try environment.int("\(prefix)_PAUSE_RECHECK_MS", default: defaults.pauseRecheckMilliseconds, in: 100...600_000)
        let transactionalGroup = environment.string("\(prefix)_TRANSACTIONAL_GROUP", default: "")
        self.transactionalGroup = transactionalGroup.isEmpty ? nil : transactionalGroup
        transactionalMaxInFlight = try environment.int(
            "\(prefix)_TRANSACTIONAL_MAX_IN_FLIGHT", default: defaults.transactionalMaxInFlight, in: 1...100_000)
        transactionalMaxHeld = try environment.int(
            "\(prefix)_TRANSACTIONAL_MAX_HELD", default: max(defaults.transactionalMaxHeld, transactionalMaxInFlight), in: transactionalMaxInFlight...1_000_000)
        fetchQueueKilobytes = try environment.int("\(prefix)_FETCH_QUEUE_KB", default: defaults.fetchQueueKilobytes, in: 64...2_097_151)
        throttledMaxHeld = try environment.int("\(prefix)_MAX_HELD_THROTTLED", default: defaults.throttledMaxHeld, in: 1...1_000_000)
    }

    /// The consumer of one lane: `base` (brokers, timeouts, `KAFKA_CONSUMER_PROPERTY_*`) with the
    /// lane's group and topics, a poll interval that outlasts a wait for room, and the bounded
    /// fetch queue. A `KAFKA_CONSUMER_PROPERTY_QUEUED_MAX_MESSAGES_KBYTES` (or `_QUEUED_MIN_MESSAGES`)
    /// still wins, as every such property does.
    package func consumer(_ base: KafkaConsumerConfiguration, topics: [String], readsThrottled: Bool = false) -> KafkaConsumerConfiguration {
        var configuration = base
        configuration.groupID = group
        configuration.topics = topics
        // A sender may wait up to a retry delay for room before it reads again (see `maxHeld`);
        // the throttled topic's, until the earliest slot it holds comes.
        configuration.maxPollIntervalMilliseconds = max(
            configuration.maxPollIntervalMilliseconds, retryMaxMilliseconds + 300_000, readsThrottled ? 3_600_000 : 0)
        configuration.fetchQueueKilobytes = fetchQueueKilobytes
        // The bytes bound the queue; librdkafka's record count (100,000) would let small records
        // pile up their per-record overhead (about 250 bytes each) beyond it.
        configuration.fetchQueueMinRecords = max(1_000, fetchQueueKilobytes)
        return configuration
    }

    /// The settings of the transactional lane's `MessageSender`: its own group, in-flight and held
    /// budgets; the rest (retries, controls, commits) as the bulk lane's.
    package var transactionalLane: SenderSettings {
        var lane = self
        lane.lane = .transactional
        lane.group = transactionalGroup ?? "\(group).transactional"
        lane.maxInFlight = transactionalMaxInFlight
        lane.maxHeld = transactionalMaxHeld
        return lane
    }

    /// The settings of the throttled topic's `MessageSender`: the group `<group>.throttled`, its
    /// own held budget, at most as many sends in flight as the bulk lane (over the bulk lane's
    /// connections); the rest as the bulk lane's.
    package var throttledLane: SenderSettings {
        var lane = self
        lane.lane = .throttled
        lane.group = "\(group).throttled"
        lane.maxHeld = throttledMaxHeld
        lane.maxInFlight = min(maxInFlight, throttledMaxHeld)
        return lane
    }

    package var retryPolicy: RetryPolicy {
        RetryPolicy(base: .milliseconds(retryBaseMilliseconds), maximum: .milliseconds(retryMaxMilliseconds))
    }
}
