import Kafka
import Logging
import Metrics
import PostgresNIO
import PushEvents
import ServiceLifecycle

/// A read model kept in PostgreSQL from Kafka topics.
package protocol Projection: Sendable {
    associatedtype Event: Sendable

    /// Consumer group id and key of the positions in `push.consumer_offsets`. Changing it
    /// rebuilds the projection from the beginning of its topics.
    var name: String { get }
    var topics: [String] { get }

    /// Reads a record. Throw to send it to the dead-letter topic with the error as reason;
    /// return nil to skip it (an event type this projection does not use).
    func decode(_ record: KafkaConsumerRecord) throws -> Event?

    /// Applies events, in offset order per partition, inside the runner's open transaction.
    /// Touch the database only through `connection`; throw to roll back and retry the batch.
    func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws

    /// Called after a transaction that applied events committed: what `apply` wrote is now
    /// visible to other connections, so a part of the same process that reads it (an outbox
    /// publisher) can be woken here instead of polling. Does nothing by default.
    func didCommit()

    /// Records a batch may hold at most, when this projection wants more than the consumer's
    /// `maxBatchSize` (a projection that writes a batch with `COPY` and one merge pays its
    /// round trips per batch, not per record). Nil by default: the consumer's setting.
    var batchSize: Int? { get }
}

extension Projection {
    package func didCommit() {}
    package var batchSize: Int? { nil }
}

/// An event with the Kafka coordinates of the record it came from.
package struct ProjectedEvent<Event: Sendable>: Sendable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64
    package var event: Event

    package init(topic: String, partition: Int32, offset: Int64, event: Event) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.event = event
    }
}

/// Runs a projection exactly once per record: each batch's changes and the partitions' next
/// offsets commit in one PostgreSQL transaction, and on assignment the consumer starts from the
/// offsets stored there. A crash at any point either keeps a batch entirely or replays it
/// entirely; records already projected are skipped by offset.
///
/// - Undecodable records go to `<topic>.dlq` (published before the transaction that advances
///   past them) and the runner keeps going.
/// - A failing transaction (database down, a bug in `apply`) is retried with backoff; the runner
///   never skips a record it could read.
package final class ProjectionRunner<P: Projection>: Service {
    package let projection: P
    private let postgres: PostgresClient
    private let consumerConfiguration: KafkaConsumerConfiguration
    private let deadLetters: DeadLetterPublisher
    private let logger: Logger
    private let appliedCounter: Counter
    private let deadLetterCounter: Counter
    private let retryCounter: Counter
    /// Time to apply one batch (its transaction, retries included): with the consumer lag, what
    /// tells a projection that cannot keep up from one that is not fed.
    private let applyTimer: Metrics.Timer

    /// - Parameters:
    ///   - consumer: group and topics are taken from the projection; the rest (brokers,
    ///     timeouts, batch size) from here.
    ///   - brokerGroup: the consumer group on the broker, by default the projection's name. The
    ///     positions are always the projection's rows of `push.consumer_offsets`: a runner under
    ///     another broker group (a replay into another database) reads every partition without
    ///     taking any from the services, and two runners writing to one database stay exactly
    ///     once (the offsets are locked and records below them skipped).
    package init(
        projection: P, postgres: PostgresClient, consumer: KafkaConsumerConfiguration, deadLetters: DeadLetterPublisher, logger: Logger,
        brokerGroup: String? = nil
    ) {
        self.projection = projection
        self.postgres = postgres
        var configuration = consumer
        configuration.groupID = brokerGroup ?? projection.name
        configuration.topics = projection.topics
        if let size = projection.batchSize { configuration.maxBatchSize = max(configuration.maxBatchSize, size) }
        self.consumerConfiguration = configuration
        self.deadLetters = deadLetters
        var logger = logger
        logger[metadataKey: "projection"] = .string(projection.name)
        self.logger = logger
        let dimensions = [("projection", projection.name)]
        appliedCounter = Counter(label: "push_projection_records_total", dimensions: dimensions)
        deadLetterCounter = Counter(label: "push_projection_dead_letters_total", dimensions: dimensions)
        retryCounter = Counter(label: "push_projection_batch_retries_total", dimensions: dimensions)
        applyTimer = Metrics.Timer(label: "push_projection_apply_seconds", dimensions: dimensions, preferredDisplayUnit: .seconds)
    }

    package func run() async throws {
        let name = projection.name
        let postgres = postgres
        let logger = logger
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration,
            startPositions: { partitions in
                try await Self.storedPositions(group: name, partitions: partitions, postgres: postgres, logger: logger)
            }, logger: logger)
        do {
            for try await batch in consumer.batches.cancelOnGracefulShutdown() {
                let started = ContinuousClock.now
                try await Self.finishing(within: Self.batchLimitOnShutdown) { try await self.processWithRetries(batch) }
                applyTimer.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
                try consumer.storeOffsets(for: batch)
            }
        } catch  where Task.isShuttingDownGracefully {
            // The transaction rolled back: whoever owns the partitions next replays the batch.
            logger.notice("Projection stopped with a batch not applied", metadata: ["error": "\(String(reflecting: error))"])
        } catch {
            await consumer.close()
            throw error
        }
        await consumer.close()
    }

    /// How long a batch's transaction may go unanswered before it is given up and retried:
    /// far above what a batch takes (`bench/indicators.sh`: a 10,000-result `broad_log` batch
    /// with its counters, 256 ms median and 291 ms at most, docs/bench-results.md), so only a
    /// transaction that will never answer reaches it.
    static var transactionDeadline: Duration { .seconds(120) }

    /// How long a batch under way when the shutdown begins may go on (PostgreSQL slow or
    /// unreachable) before it is abandoned: a share of the service's shutdown grace.
    static var batchLimitOnShutdown: Duration { .seconds(2) }

    /// Runs `body`; once a graceful shutdown begins, lets it go on for at most `limit`, then
    /// cancels it and throws `CancellationError`.
    private static func finishing<T: Sendable>(within limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await gracefulShutdown()
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            while let result = try await group.next() {
                if let result { return result }
                group.cancelAll()
            }
            throw CancellationError()
        }
    }

    /// Next offsets stored for these partitions; a partition never projected starts at the
    /// beginning of the topic.
    static func storedPositions(group: String, partitions: [KafkaTopicPartition], postgres: PostgresClient, logger: Logger) async throws
        -> [KafkaTopicPartition: Int64]
    {
        let stored = try await ConsumerOffsets.stored(group: group, topics: Array(Set(partitions.map(\.topic))), postgres: postgres, logger: logger)
        return Dictionary(uniqueKeysWithValues: partitions.map { ($0, stored[$0] ?? KafkaOffset.beginning) })
    }

    private func processWithRetries(_ batch: [KafkaConsumerRecord]) async throws {
        var delay = Duration.milliseconds(100)
        while true {
            do {
                do {
                    try await process(batch)
                } catch  where Self.refusal(error) != nil {
                    try await setAsideRefused(batch)
                }
                return
            } catch {
                // Shutting down: leave the batch unstored; whoever owns the partition next replays it.
                if Task.isCancelled || Task.isShuttingDownGracefully { throw error }
                retryCounter.increment()
                logger.error("Projection batch failed; retrying", metadata: ["error": "\(String(reflecting: error))", "retry.in": "\(delay)"])
                // A shutdown ends the wait: the batch stays unstored for the next owner.
                try await cancelWhenGracefulShutdown { [delay] in try await Task.sleep(for: delay) }
                delay = min(delay * 2, .seconds(10))
            }
        }
    }

    /// A record PostgreSQL refuses for what it holds (a data exception or a violated constraint:
    /// a NUL character in a text, a value out of range) would fail its batch at every retry and
    /// stop the projection for good. So a batch refused that way is applied again record by
    /// record: the refused ones go to the dead-letter topic with PostgreSQL's reason and their
    /// positions are stored without applying them; the others are applied as usual. Any other
    /// error goes back to the caller's retries.
    private func setAsideRefused(_ batch: [KafkaConsumerRecord]) async throws {
        for record in batch {
            do {
                try await process([record])
            } catch {
                guard let reason = Self.refusal(error) else { throw error }
                try await deadLetters.publish([(record, reason)])
                try await process([record], applying: false)
                deadLetterCounter.increment()
                logger.warning(
                    "Record refused by PostgreSQL sent to the dead-letter topic",
                    metadata: [
                        "kafka.topic": "\(record.topic)", "kafka.partition": "\(record.partition)",
                        "kafka.offset": "\(record.offset)", "reason": "\(reason)",
                    ])
            }
        }
    }

    /// PostgreSQL's reason when `error` is a refusal of the data itself (SQLSTATE class 22, data
    /// exception, or 23, integrity constraint violation): retrying cannot help. Only the server's
    /// message and code, never the statement or its values.
    static func refusal(_ error: any Error) -> String? {
        let psql = (error as? PSQLError) ?? ((error as? PostgresTransactionError)?.closureError as? PSQLError)
        guard let psql, psql.code == .server, let state = psql.serverInfo?[.sqlState], state.hasPrefix("22") || state.hasPrefix("23") else {
            return nil
        }
        return "PostgreSQL refused the record: \(psql.serverInfo?[.message] ?? "data exception") (SQLSTATE \(state))"
    }

    /// Applies `batch` and stores its positions in one transaction; with `applying` false, only
    /// stores the positions (a record set aside).
    private func process(_ batch: [KafkaConsumerRecord], applying: Bool = true) async throws {
        var events: [ProjectedEvent<P.Event>] = []
        var letters: [(record: KafkaConsumerRecord, reason: String)] = []
        var nextOffsets: [KafkaTopicPartition: Int64] = [:]
        for record in batch {
            nextOffsets[record.topicPartition] = max(nextOffsets[record.topicPartition] ?? 0, record.offset + 1)
            do {
                if let event = try projection.decode(record) {
                    events.append(ProjectedEvent(topic: record.topic, partition: record.partition, offset: record.offset, event: event))
                }
            } catch {
                letters.append((record, String(describing: error)))
            }
        }
        try await deadLetters.publish(letters)
        for letter in letters {
            logger.warning(
                "Record sent to the dead-letter topic",
                metadata: [
                    "kafka.topic": "\(letter.record.topic)", "kafka.partition": "\(letter.record.partition)",
                    "kafka.offset": "\(letter.record.offset)", "reason": "\(letter.reason)",
                ])
        }

        // A transaction caught by a server crash may never answer (`withStatementDeadline`);
        // given up, the batch is retried, and if the abandoned one commits after all, the
        // offsets' row locks in `commit` make the retry skip what it applied.
        let appliedCount = try await withStatementDeadline(Self.transactionDeadline) { [events, nextOffsets] in
            try await self.commit(events, nextOffsets: nextOffsets, applying: applying)
        }
        if appliedCount > 0 { projection.didCommit() }
        appliedCounter.increment(by: appliedCount)
        deadLetterCounter.increment(by: letters.count)
    }

    /// The batch's transaction: its partitions' offsets locked, the events not yet applied
    /// applied, the offsets advanced. Returns how many events it applied.
    private func commit(_ events: [ProjectedEvent<P.Event>], nextOffsets: [KafkaTopicPartition: Int64], applying: Bool) async throws -> Int {
        let group = projection.name
        let topics = nextOffsets.keys.map(\.topic)
        let partitions = nextOffsets.keys.map(\.partition)
        let offsets = nextOffsets.keys.map { nextOffsets[$0]! }
        let projection = self.projection
        let logger = self.logger
        return try await postgres.withTransaction(logger: logger) { connection -> Int in
            // Lock this batch's partitions: a member that lost them in a rebalance (a zombie)
            // waits here and then sees the new owner's offsets.
            try await connection.query(
                """
                INSERT INTO push.consumer_offsets (group_id, topic, partition, next_offset)
                SELECT \(group), t, p, 0 FROM unnest(\(topics)::text[], \(partitions)::int[]) AS x(t, p)
                ON CONFLICT DO NOTHING
                """,
                logger: logger
            )
            let rows = try await connection.query(
                """
                SELECT o.topic, o.partition, o.next_offset FROM push.consumer_offsets o
                JOIN unnest(\(topics)::text[], \(partitions)::int[]) AS x(t, p) ON o.topic = x.t AND o.partition = x.p
                WHERE o.group_id = \(group)
                ORDER BY o.topic, o.partition
                FOR UPDATE OF o
                """,
                logger: logger
            )
            var stored: [KafkaTopicPartition: Int64] = [:]
            for try await (topic, partition, offset) in rows.decode((String, Int32, Int64).self) {
                stored[KafkaTopicPartition(topic: topic, partition: partition)] = offset
            }
            let fresh = events.filter { $0.offset >= stored[KafkaTopicPartition(topic: $0.topic, partition: $0.partition), default: 0] }
            if applying, !fresh.isEmpty {
                try await projection.apply(fresh, on: connection, logger: logger)
            }
            try await connection.query(
                """
                UPDATE push.consumer_offsets o SET next_offset = x.n, updated_at = now()
                FROM unnest(\(topics)::text[], \(partitions)::int[], \(offsets)::bigint[]) AS x(t, p, n)
                WHERE o.group_id = \(group) AND o.topic = x.t AND o.partition = x.p AND o.next_offset < x.n
                """,
                logger: logger
            )
            return applying ? fresh.count : 0
        }
    }
}

/// A projection whose records are event envelopes read with an `EventDecoder`: known events are
/// projected, unknown types and versions skipped, undecodable records dead-lettered.
package protocol EnvelopeProjection: Projection {
    var decoder: EventDecoder<Event> { get }
}

extension EnvelopeProjection {
    package func decode(_ record: KafkaConsumerRecord) throws -> Event? {
        switch try decoder.decode(record.value) {
        case .known(let event, _): event
        case .unknown: nil
        }
    }
}

/// The positions projections keep in `push.consumer_offsets`, in the transaction of the rows they
/// project (`ProjectionRunner`).
package enum ConsumerOffsets {
    /// The next offsets a projection (consumer group `group`) stored for each partition of
    /// `topics` it has projected: where it resumes (`pushctl projections status` and `replay`).
    package static func stored(group: String, topics: [String], postgres: PostgresClient, logger: Logger) async throws
        -> [KafkaTopicPartition: Int64]
    {
        let rows = try await postgres.query(
            "SELECT topic, partition, next_offset FROM push.consumer_offsets WHERE group_id = \(group) AND topic = ANY(\(topics))",
            logger: logger
        )
        var stored: [KafkaTopicPartition: Int64] = [:]
        for try await (topic, partition, offset) in rows.decode((String, Int32, Int64).self) {
            stored[KafkaTopicPartition(topic: topic, partition: partition)] = offset
        }
        return stored
    }
}
