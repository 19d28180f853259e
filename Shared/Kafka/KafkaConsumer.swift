import CRdKafka
import Logging
import Metrics
import NIOCore
import NIOPosix
import ServiceLifecycle
import Synchronization

/// Special offsets a start-position provider may return.
package enum KafkaOffset {
    /// The partition's first retained record.
    package static let beginning: Int64 = -2
    /// Only records produced after assignment.
    package static let end: Int64 = -1
}

/// A consumer-group member, read as an `AsyncSequence` of record batches (`batches`) or of single
/// records (`records`).
///
/// - Reading is the poll: records are fetched only while someone iterates, which is the
///   back-pressure. Iterate from one task at a time.
/// - Offsets are stored only when the application calls `storeOffsets(for:)`; stored offsets are
///   committed every `commitIntervalMilliseconds` and on close. Unprocessed records are read again
///   by whoever owns the partition next.
/// - On assignment, the optional start-position provider is asked where each new partition
///   starts (a projection answers from its own table, so its position and its data commit
///   together); partitions it does not name start from the group's committed offset. The
///   positions it names are stored as offsets too, so the group's committed offsets follow them.
/// - Every librdkafka call that may block runs on the consumer's own threads, never on Swift's
///   cooperative pool.
/// - `push_consumer_lag` is updated with every batch read and, every
///   `lagRefreshIntervalMilliseconds`, from the broker's high watermarks, also while nobody reads.
package final class KafkaConsumer: Service, Sendable {
    /// Given newly assigned partitions, returns the next offset to read for those it knows.
    package typealias StartPositionProvider = @Sendable ([KafkaTopicPartition]) async throws -> [KafkaTopicPartition: Int64]
    /// Given partitions about to be taken away (a rebalance, not a loss), finishes or hands back
    /// the work in progress on them and stores their offsets; the consumer then commits before
    /// letting them go, so that their next owner starts exactly after what was done here.
    package typealias RevocationHandler = @Sendable ([KafkaTopicPartition]) async -> Void

    package let configuration: KafkaConsumerConfiguration
    private let client: RdKafkaClient
    private let queue: QueueHandle
    private let thread: NIOThreadPool
    /// Runs the periodic lag queries (they wait for the broker), so they never hold up a poll.
    private let lagThread: NIOThreadPool
    private let lagTimer = Mutex<RepeatedTask?>(nil)
    private let metricsFactory: any MetricsFactory
    private let startPositions: StartPositionProvider?
    private let revocationHandler: RevocationHandler?
    private let logger: Logger
    private let state = Mutex(State())

    private struct State {
        var assignment: Set<KafkaTopicPartition> = []
        var everAssigned = false
        var closed = false
        /// Per owned partition, the offset of the next record this member will hand out: after
        /// the last one read, or the start position it was assigned at.
        var nextOffsets: [KafkaTopicPartition: Int64] = [:]
        /// `push_consumer_lag` per owned partition.
        var lagGauges: [KafkaTopicPartition: Gauge] = [:]
    }

    package init(
        configuration: KafkaConsumerConfiguration,
        startPositions: StartPositionProvider? = nil,
        revocationHandler: RevocationHandler? = nil,
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) throws(KafkaError) {
        self.configuration = configuration
        self.metricsFactory = metricsFactory
        self.startPositions = startPositions
        self.revocationHandler = revocationHandler
        var logger = logger
        logger[metadataKey: "kafka.group"] = .string(configuration.groupID)
        self.logger = logger
        let client = try RdKafkaClient(
            type: RD_KAFKA_CONSUMER,
            properties: configuration.rdKafkaProperties,
            events: RD_KAFKA_EVENT_REBALANCE | RD_KAFKA_EVENT_FETCH | RD_KAFKA_EVENT_OFFSET_COMMIT,
            sink: RdKafkaEventSink(logger: logger)
        )
        self.client = client
        guard let queue = rd_kafka_queue_get_consumer(client.handle) else {
            throw KafkaError(code: .consumer, reason: "no consumer queue (is group.id set?)", isRetriable: false)
        }
        self.queue = QueueHandle(pointer: queue)
        KafkaRuntime.warnIfTooOld(logger: logger)

        let list = rd_kafka_topic_partition_list_new(Int32(configuration.topics.count))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for topic in configuration.topics {
            rd_kafka_topic_partition_list_add(list, topic, RD_KAFKA_PARTITION_UA)
        }
        let err = rd_kafka_subscribe(client.handle, list)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            rd_kafka_queue_destroy(queue)
            throw KafkaError(code: .consumer, err, detail: "subscribe")
        }
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        lagThread = NIOThreadPool(numberOfThreads: 1)
        lagThread.start()
        startLagRefresh()
    }

    // MARK: reading

    /// Batches of records as they arrive, each at most `maxBatchSize` long and never empty.
    package var batches: Batches { Batches(consumer: self) }

    /// Records one by one.
    package var records: Records { Records(consumer: self) }

    package struct Batches: AsyncSequence, Sendable {
        package typealias Element = [KafkaConsumerRecord]
        let consumer: KafkaConsumer
        package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }

        package struct AsyncIterator: AsyncIteratorProtocol {
            let consumer: KafkaConsumer
            package mutating func next() async throws -> [KafkaConsumerRecord]? {
                try await consumer.nextBatch()
            }
        }
    }

    package struct Records: AsyncSequence, Sendable {
        package typealias Element = KafkaConsumerRecord
        let consumer: KafkaConsumer
        package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(consumer: consumer) }

        package struct AsyncIterator: AsyncIteratorProtocol {
            let consumer: KafkaConsumer
            var buffer: [KafkaConsumerRecord] = []
            var position = 0
            package mutating func next() async throws -> KafkaConsumerRecord? {
                if position == buffer.count {
                    guard let batch = try await consumer.nextBatch() else { return nil }
                    buffer = batch
                    position = 0
                }
                defer { position += 1 }
                return buffer[position]
            }
        }
    }

    /// The next non-empty batch; nil once the consumer is closed or the task is cancelled.
    package func nextBatch() async throws -> [KafkaConsumerRecord]? {
        while true {
            if state.withLock({ $0.closed }) || Task.isCancelled { return nil }
            if let fatal = client.sink.fatal { throw fatal }
            let polled: PolledEvents
            do {
                polled = try await thread.runIfActive { [self] in poll(maxRecords: configuration.maxBatchSize) }
            } catch {
                return nil  // the poll thread stopped: the consumer is closing
            }
            if let rebalance = polled.rebalance {
                try await handleRebalance(rebalance)
            }
            if !polled.records.isEmpty { return polled.records }
        }
    }

    private struct PolledEvents: Sendable {
        var records: [KafkaConsumerRecord] = []
        var rebalance: EventHandle?
    }

    /// Runs on the consumer thread. Stops early at a rebalance so that it is served before any
    /// record fetched after it.
    private func poll(maxRecords: Int) -> PolledEvents {
        var polled = PolledEvents()
        defer { recordLag(polled.records) }
        var timeout: Int32 = 100
        while polled.records.count < maxRecords, let event = rd_kafka_queue_poll(queue.pointer, timeout) {
            timeout = 0
            switch rd_kafka_event_type(event) {
            case RD_KAFKA_EVENT_FETCH:
                while let message = rd_kafka_event_message_next(event) {
                    if message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                        polled.records.append(Self.record(from: message))
                    } else {
                        logger.warning("Kafka fetch error", metadata: ["error": "\(KafkaError(code: .consumer, message.pointee.err))"])
                    }
                }
                rd_kafka_event_destroy(event)
            case RD_KAFKA_EVENT_REBALANCE:
                polled.rebalance = EventHandle(pointer: event)
                return polled
            case RD_KAFKA_EVENT_OFFSET_COMMIT:
                let err = rd_kafka_event_error(event)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                    logger.warning("Kafka offset commit failed; it is retried with the next commit", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
                }
                rd_kafka_event_destroy(event)
            case RD_KAFKA_EVENT_ERROR:
                logger.warning("Kafka consumer error", metadata: ["error": "\(KafkaError(code: .consumer, rd_kafka_event_error(event)))"])
                rd_kafka_event_destroy(event)
            default:
                rd_kafka_event_destroy(event)
            }
        }
        return polled
    }

    /// `push_consumer_lag{group, topic, partition}` after a poll: records of the partition after
    /// the last one just read, from the high watermark the broker sent with the fetched data
    /// (librdkafka's cached value: no request). 0 when the reader is at the end.
    private func recordLag(_ records: [KafkaConsumerRecord]) {
        guard !records.isEmpty else { return }
        var next: [KafkaTopicPartition: Int64] = [:]
        for record in records { next[record.topicPartition] = max(next[record.topicPartition] ?? 0, record.offset + 1) }
        state.withLock { state in
            for (partition, offset) in next where state.assignment.contains(partition) {
                state.nextOffsets[partition] = max(state.nextOffsets[partition] ?? 0, offset)
            }
        }
        for (partition, offset) in next {
            var low: Int64 = 0
            var high: Int64 = 0
            guard rd_kafka_get_watermark_offsets(client.handle, partition.topic, partition.partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR,
                high >= 0
            else { continue }
            record(lag: high - offset, of: partition)
        }
    }

    private func record(lag: Int64, of partition: KafkaTopicPartition) {
        let gauge: Gauge? = state.withLock { state in
            guard state.assignment.contains(partition) else { return nil }
            if let gauge = state.lagGauges[partition] { return gauge }
            let gauge = Gauge(
                label: "push_consumer_lag",
                dimensions: [("group", configuration.groupID), ("topic", partition.topic), ("partition", String(partition.partition))],
                factory: metricsFactory
            )
            state.lagGauges[partition] = gauge
            return gauge
        }
        gauge?.record(max(0, lag))
    }

    /// Every `lagRefreshIntervalMilliseconds`, `refreshLag` on the lag thread: a timer on an
    /// event loop, not a task, because a stalled application is exactly when nobody polls. Each
    /// run waits for the previous one; `close()` cancels it.
    private func startLagRefresh() {
        let interval = TimeAmount.milliseconds(Int64(max(10, configuration.lagRefreshIntervalMilliseconds)))
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let timer = loop.scheduleRepeatedAsyncTask(initialDelay: interval, delay: interval) { [weak self] task in
            guard let self else {
                task.cancel()
                return loop.makeSucceededVoidFuture()
            }
            return self.lagThread.runIfActive(eventLoop: loop) { self.refreshLag() }.recover { _ in }
        }
        lagTimer.withLock { $0 = timer }
    }

    /// How long one lag query may wait for the broker.
    private static let lagQueryTimeoutMilliseconds: Int32 = 2_000

    /// Runs on the lag thread. For each owned partition, asks the broker for its high watermark
    /// and records how many records lie after what this member has read. A partition nothing was
    /// read from yet counts from the group's committed offset (or, without one, from where
    /// `auto.offset.reset` would start). Stops at the first query that fails: the broker is
    /// slow or away, and the next round tries again.
    private func refreshLag() {
        let (partitions, read, closed) = state.withLock { ($0.assignment, $0.nextOffsets, $0.closed) }
        guard !closed, !partitions.isEmpty else { return }
        let unread = partitions.filter { read[$0] == nil }.sorted { ($0.topic, $0.partition) < ($1.topic, $1.partition) }
        let committed = unread.isEmpty ? [:] : committedOffsets(unread)
        for partition in partitions.sorted(by: { ($0.topic, $0.partition) < ($1.topic, $1.partition) }) {
            // Closing: the next partitions are not asked for (each query may wait its timeout).
            guard !state.withLock({ $0.closed }) else { return }
            var low: Int64 = 0
            var high: Int64 = 0
            let err = rd_kafka_query_watermark_offsets(
                client.handle, partition.topic, partition.partition, &low, &high, Self.lagQueryTimeoutMilliseconds)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                logger.debug("Consumer lag not refreshed", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
                return
            }
            let next = state.withLock { $0.nextOffsets[partition] } ?? committed[partition] ?? (configuration.offsetReset == "latest" ? high : low)
            record(lag: high - next, of: partition)
        }
    }

    /// The group's committed offsets of `partitions` (a broker request); partitions without one
    /// are left out.
    private func committedOffsets(_ partitions: [KafkaTopicPartition]) -> [KafkaTopicPartition: Int64] {
        let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for partition in partitions {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        }
        guard let list, rd_kafka_committed(client.handle, list, Self.lagQueryTimeoutMilliseconds) == RD_KAFKA_RESP_ERR_NO_ERROR else { return [:] }
        var offsets: [KafkaTopicPartition: Int64] = [:]
        for index in 0..<Int(list.pointee.cnt) {
            let element = list.pointee.elems[index]
            if element.offset >= 0, element.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                offsets[KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition)] = element.offset
            }
        }
        return offsets
    }

    static func record(from message: UnsafePointer<rd_kafka_message_t>) -> KafkaConsumerRecord {
        let m = message.pointee
        let topic = String(cString: rd_kafka_topic_name(m.rkt))
        let key = m.key.map { Array(UnsafeRawBufferPointer(start: $0, count: m.key_len)) }
        let value = m.payload.map { Array(UnsafeRawBufferPointer(start: $0, count: m.len)) } ?? []
        var headers: [KafkaHeader] = []
        var headerList: OpaquePointer?
        if rd_kafka_message_headers(message, &headerList) == RD_KAFKA_RESP_ERR_NO_ERROR, let headerList {
            var index = 0
            var name: UnsafePointer<CChar>?
            var valuePointer: UnsafeRawPointer?
            var size = 0
            while rd_kafka_header_get_all(headerList, index, &name, &valuePointer, &size) == RD_KAFKA_RESP_ERR_NO_ERROR {
                headers.append(
                    KafkaHeader(
                        name: name.map { String(cString: $0) } ?? "",
                        value: valuePointer.map { Array(UnsafeRawBufferPointer(start: $0, count: size)) }
                    ))
                index += 1
            }
        }
        var timestampType = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE
        let timestamp = rd_kafka_message_timestamp(message, &timestampType)
        return KafkaConsumerRecord(
            topic: topic, partition: m.partition, offset: m.offset, key: key, value: value,
            headers: headers, timestampMilliseconds: timestampType == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? nil : timestamp
        )
    }

    // MARK: rebalancing

    /// `readingStartPositions` false assigns at the group's committed positions without asking
    /// the provider: used while closing, when nothing fetched is processed or stored.
    private func handleRebalance(_ event: EventHandle, readingStartPositions: Bool = true) async throws {
        defer { rd_kafka_event_destroy(event.pointer) }
        let kind = rd_kafka_event_error(event.pointer)
        guard let list = rd_kafka_event_topic_partition_list(event.pointer) else { return }
        let partitions = Self.partitions(of: list)
        let cooperative = String(cString: rd_kafka_rebalance_protocol(client.handle)) == "COOPERATIVE"
        let listHandle = ListHandle(pointer: list)

        if kind == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS {
            var positions: [KafkaTopicPartition: Int64] = [:]
            if readingStartPositions, let startPositions, !partitions.isEmpty {
                positions = try await Self.withRetries(logger: logger, "read start positions") {
                    try await startPositions(partitions)
                }
                for (partition, offset) in positions {
                    if let entry = rd_kafka_topic_partition_list_find(list, partition.topic, partition.partition) {
                        entry.pointee.offset = offset
                    }
                }
            }
            try await thread.runIfActive { [client] in
                if cooperative {
                    if let error = rd_kafka_incremental_assign(client.handle, listHandle.pointer) {
                        defer { rd_kafka_error_destroy(error) }
                        throw KafkaError(code: .consumer, rd_kafka_error_code(error), detail: "incremental assign")
                    }
                } else {
                    let err = rd_kafka_assign(client.handle, listHandle.pointer)
                    if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(code: .consumer, err, detail: "assign") }
                }
            }
            state.withLock {
                $0.assignment.formUnion(partitions)
                $0.everAssigned = true
                for (partition, offset) in positions where offset >= 0 { $0.nextOffsets[partition] = offset }
            }
            // The group's committed offsets follow a projection's own positions: stored now, they
            // go with the next commit, so that whoever reads the group's lag from the broker
            // (`KafkaGroupLag`, `kafka-consumer-groups`) sees where the projection is, even when
            // it has nothing new to read.
            try storeOffsets(positions.filter { $0.value >= 0 })
            logger.info("Kafka partitions assigned", metadata: ["partitions": "\(partitions.map(\.description).sorted())"])
        } else {
            let lost = rd_kafka_assignment_lost(client.handle) != 0
            if !lost, let revocationHandler, !partitions.isEmpty {
                await revocationHandler(partitions)
                let logger = self.logger
                try await thread.runIfActive { [client] in
                    let err = rd_kafka_commit(client.handle, nil, 0)
                    if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                        logger.warning("Offset commit before revocation failed", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
                    }
                }
            }
            try await thread.runIfActive { [client] in
                if cooperative {
                    if let error = rd_kafka_incremental_unassign(client.handle, listHandle.pointer) {
                        defer { rd_kafka_error_destroy(error) }
                        throw KafkaError(code: .consumer, rd_kafka_error_code(error), detail: "incremental unassign")
                    }
                } else {
                    let err = rd_kafka_assign(client.handle, nil)
                    if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(code: .consumer, err, detail: "unassign") }
                }
            }
            // Another member reports the partitions now: this one's figure would go stale.
            let gauges = state.withLock { state in
                state.assignment.subtract(partitions)
                return partitions.compactMap { partition in
                    state.nextOffsets[partition] = nil
                    return state.lagGauges.removeValue(forKey: partition)
                }
            }
            gauges.forEach { $0.destroy() }
            logger.info("Kafka partitions revoked", metadata: ["partitions": "\(partitions.map(\.description).sorted())", "lost": "\(lost)"])
        }
    }

    /// Up to six attempts, 200 ms apart and doubling (about 6 s in all).
    private static func withRetries<T>(logger: Logger, _ what: String, _ body: () async throws -> T) async throws -> T {
        var delay = Duration.milliseconds(200)
        var attempt = 1
        while true {
            do {
                return try await body()
            } catch {
                if attempt == 6 || Task.isCancelled { throw error }
                logger.warning("Retrying: could not \(what)", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                try await Task.sleep(for: delay)
                delay *= 2
                attempt += 1
            }
        }
    }

    static func partitions(of list: UnsafeMutablePointer<rd_kafka_topic_partition_list_t>) -> [KafkaTopicPartition] {
        (0..<Int(list.pointee.cnt)).map { index in
            let element = list.pointee.elems[index]
            return KafkaTopicPartition(topic: String(cString: element.topic), partition: element.partition)
        }
    }

    /// The partitions this member currently owns.
    package var assignment: Set<KafkaTopicPartition> { state.withLock { $0.assignment } }

    // MARK: offsets and flow control

    /// Marks records as processed: for each partition, the offset after the highest record is
    /// stored and committed with the next commit. Records of partitions this member no longer
    /// owns are ignored (their new owner resumes from its own position).
    package func storeOffsets(for records: some Sequence<KafkaConsumerRecord>) throws(KafkaError) {
        var next: [KafkaTopicPartition: Int64] = [:]
        for record in records {
            next[record.topicPartition] = max(next[record.topicPartition] ?? 0, record.offset + 1)
        }
        try storeOffsets(next)
    }

    /// Stores explicit next offsets (the offset of the next record to read) per partition.
    package func storeOffsets(_ offsets: [KafkaTopicPartition: Int64]) throws(KafkaError) {
        guard !offsets.isEmpty else { return }
        let list = rd_kafka_topic_partition_list_new(Int32(offsets.count))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for (partition, offset) in offsets {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)?.pointee.offset = offset
        }
        let err = rd_kafka_offsets_store(client.handle, list)
        // _STATE: none of these partitions is assigned any more (revoked during processing).
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR__STATE {
            throw KafkaError(code: .consumer, err, detail: "store offsets")
        }
    }

    /// Commits the stored offsets now and waits for the broker's answer.
    package func commit() async throws(KafkaError) {
        let err: rd_kafka_resp_err_t
        do {
            err = try await thread.runIfActive { [client] in rd_kafka_commit(client.handle, nil, 0) }
        } catch {
            throw .shutDownError
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR__NO_OFFSET {
            throw KafkaError(code: .consumer, err, detail: "commit")
        }
    }

    /// Stops fetching from these partitions (their position is kept) until `resume`.
    package func pause(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        try changeFlow(partitions, pause: true)
    }

    /// Fetches again from paused partitions.
    package func resume(_ partitions: [KafkaTopicPartition]) throws(KafkaError) {
        try changeFlow(partitions, pause: false)
    }

    private func changeFlow(_ partitions: [KafkaTopicPartition], pause: Bool) throws(KafkaError) {
        guard !partitions.isEmpty else { return }
        let list = rd_kafka_topic_partition_list_new(Int32(partitions.count))
        defer { rd_kafka_topic_partition_list_destroy(list) }
        for partition in partitions {
            rd_kafka_topic_partition_list_add(list, partition.topic, partition.partition)
        }
        let err = pause ? rd_kafka_pause_partitions(client.handle, list) : rd_kafka_resume_partitions(client.handle, list)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(code: .consumer, err, detail: pause ? "pause" : "resume") }
    }

    /// Asks a broker for cluster metadata: succeeds when the cluster answers within the timeout.
    package func checkBroker(timeout: Duration = .seconds(2)) async throws(KafkaError) {
        try await client.checkBroker(timeout: timeout)
    }

    // MARK: lifecycle

    /// A member that leaves while its first join is still in progress can leave some brokers'
    /// group coordinators waiting for it for good (seen with Tansu 0.6: the group never assigns
    /// again). So a consumer closed before its first assignment first lets the join finish
    /// (serving the rebalance, dropping any record fetched meanwhile, storing nothing), for at
    /// most `joinGraceOnCloseMilliseconds`, then leaves.
    ///
    /// A member no coordinator has answered yet (no member id: the broker is unreachable, or
    /// the join has not begun) keeps no group waiting, so it leaves at once. The partitions
    /// assigned meanwhile start where the group committed, without asking the start-position
    /// provider (it may need a database that is down, and nothing read now is processed).
    private func finishJoinBeforeLeaving() async {
        guard !state.withLock({ $0.everAssigned }), hasMemberID else { return }
        let deadline = ContinuousClock.now + .milliseconds(configuration.joinGraceOnCloseMilliseconds)
        while ContinuousClock.now < deadline, !state.withLock({ $0.everAssigned }) {
            guard let polled = try? await thread.runIfActive({ [self] in poll(maxRecords: configuration.maxBatchSize) }) else { return }
            if let rebalance = polled.rebalance {
                do {
                    try await handleRebalance(rebalance, readingStartPositions: false)
                } catch {
                    logger.debug("Rebalance during close failed", metadata: ["error": "\(error)"])
                    return
                }
            }
        }
    }

    /// Stops the lag timer without waiting for a query under way: after a pause of the process
    /// (SIGSTOP, a stalled machine) each query can wait its full timeout, one
    /// partition after the other, and a stop waited for them (4 to 6 s seen). The query ends
    /// before the client is destroyed: `close()` shuts the lag thread down first, on the
    /// consumer's thread, inside the bounded leave.
    private func stopLagRefresh() {
        lagTimer.withLock({ $0 })?.cancel()
    }

    /// Whether a group coordinator has given this member an id (a join got an answer).
    private var hasMemberID: Bool {
        guard let id = rd_kafka_memberid(client.handle) else { return false }
        defer { rd_kafka_mem_free(client.handle, id) }
        return id.pointee != 0
    }

    /// Waits for graceful shutdown, then commits and leaves the group.
    package func run() async throws {
        try? await gracefulShutdown()
        await close()
    }

    /// Commits stored offsets, leaves the group (its partitions move to the other members at
    /// once) and releases the client. Iteration ends. Idempotent.
    ///
    /// Leaving is waited for `leaveTimeoutMilliseconds` at most: a member closed while its group
    /// rebalances (other instances stopping at the same moment) waits in librdkafka's close for
    /// the coordinator's answer to a join in flight, up to the rebalance's timeout. Past the
    /// bound `close()` returns and the close finishes on the consumer's thread by itself; the
    /// offsets were committed before it, so a process that exits meanwhile loses nothing.
    package func close() async {
        let first = state.withLock { state in
            defer { state.closed = true }
            return !state.closed
        }
        guard first else { return }
        stopLagRefresh()
        await finishJoinBeforeLeaving()
        let logger = self.logger
        _ = try? await thread.runIfActive { [client] in
            let err = rd_kafka_commit(client.handle, nil, 0)
            if err != RD_KAFKA_RESP_ERR_NO_ERROR, err != RD_KAFKA_RESP_ERR__NO_OFFSET {
                logger.warning("Final offset commit failed", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
            }
        }
        let leave = thread.runIfActive(eventLoop: MultiThreadedEventLoopGroup.singleton.any()) { [client, queue, lagThread] in
            _ = rd_kafka_consumer_close(client.handle)
            // A lag query still under way uses the client: it ends before the client does.
            try? lagThread.syncShutdownGracefully()
            rd_kafka_queue_destroy(queue.pointer)
            client.destroy()
        }
        let left = await Self.completes(leave, within: .milliseconds(Int64(configuration.leaveTimeoutMilliseconds)))
        let gauges = state.withLock { state in
            state.assignment = []
            state.nextOffsets = [:]
            defer { state.lagGauges = [:] }
            return Array(state.lagGauges.values)
        }
        gauges.forEach { $0.destroy() }
        if left {
            try? await thread.shutdownGracefully()
            logger.info("Kafka consumer closed")
        } else {
            // The close goes on on the consumer's thread, which stops when it is done.
            thread.shutdownGracefully { _ in }
            logger.warning(
                "The group did not let the member leave in time; closing goes on in the background (if the process exits first, its partitions move at the session timeout)",
                metadata: ["limit.ms": "\(configuration.leaveTimeoutMilliseconds)"])
        }
    }

    /// Whether `future` completes within `limit`; it is not waited for past it.
    private static func completes(_ future: EventLoopFuture<Void>, within limit: TimeAmount) async -> Bool {
        let answered = Mutex(false)
        return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            @Sendable func answer(_ completed: Bool) {
                let first = answered.withLock { done in
                    defer { done = true }
                    return !done
                }
                if first { continuation.resume(returning: completed) }
            }
            let timer = future.eventLoop.scheduleTask(in: limit) { answer(false) }
            future.whenComplete { _ in
                timer.cancel()
                answer(true)
            }
        }
    }
}

// Raw librdkafka pointers passed between the consumer thread and Swift tasks. librdkafka objects
// are thread-safe or, for events and lists, used by one party at a time.
struct QueueHandle: @unchecked Sendable { let pointer: OpaquePointer }
struct EventHandle: @unchecked Sendable { let pointer: OpaquePointer }
struct ListHandle: @unchecked Sendable { let pointer: UnsafeMutablePointer<rd_kafka_topic_partition_list_t> }
