import CRdKafka
import Logging
import NIOPosix
import PushWire
import ServiceLifecycle
import Synchronization

/// An idempotent Kafka producer whose `send` returns once the broker has stored the record.
///
/// Many tasks may `send` at the same time: librdkafka batches their records (`linger.ms`), so
/// awaiting each delivery report does not cost throughput. `send(_:)` with an array enqueues the
/// whole array before waiting, which is the fastest way to publish many records from one task.
///
/// Delivery reports arrive on librdkafka's background thread and resume the waiting tasks; no
/// Swift thread polls. As a `Service`, the producer flushes on graceful shutdown.
///
/// An idempotent producer can become unusable: a fatal librdkafka error, or the broker fencing
/// its producer id (seen after delivery timeouts, when the epoch bump is refused). The records
/// concerned fail; the next `send` replaces the librdkafka instance with a new one and logs it,
/// so the service recovers without a restart.
package final class KafkaProducer: Service, Sendable {
    package let configuration: KafkaProducerConfiguration
    private let current: Mutex<RdKafkaClient>
    private let health: ProducerHealth
    private let room: QueueRoom
    private let logger: Logger
    private let isClosed = Atomic<Bool>(false)

    package init(configuration: KafkaProducerConfiguration, logger: Logger) throws(KafkaError) {
        self.configuration = configuration
        self.logger = logger
        let health = ProducerHealth()
        let room = QueueRoom()
        self.health = health
        self.room = room
        self.current = Mutex(try Self.makeClient(configuration: configuration, health: health, room: room, logger: logger))
        KafkaRuntime.warnIfTooOld(logger: logger)
    }

    private static func makeClient(configuration: KafkaProducerConfiguration, health: ProducerHealth, room: QueueRoom, logger: Logger) throws(KafkaError)
        -> RdKafkaClient
    {
        let sink = RdKafkaEventSink(logger: logger) { event in
            Self.handleDeliveryReport(event, health: health)
            room.reportsArrived()
        }
        return try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: configuration.rdKafkaProperties, events: RD_KAFKA_EVENT_DR, sink: sink)
    }

    private var client: RdKafkaClient { current.withLock { $0 } }

    /// The current instance, counted as in use until `release` (so it is not destroyed under
    /// a task that is still enqueueing into it).
    private func acquireClient() -> RdKafkaClient {
        current.withLock { client in
            client.activeSenders.enter()
            return client
        }
    }

    /// Waits until no task enqueues into `client` any more (they notice a close or
    /// cancellation at their next record), flushes for at most `flushMilliseconds`, then purges
    /// what it still holds, so every waiting sender gets a result, and destroys it.
    private func retire(_ client: RdKafkaClient, flushMilliseconds: Int32) async {
        await client.activeSenders.drained()
        let logger = self.logger
        _ = try? await NIOThreadPool.singleton.runIfActive {
            if flushMilliseconds > 0, rd_kafka_flush(client.handle, flushMilliseconds) != RD_KAFKA_RESP_ERR_NO_ERROR {
                logger.error(
                    "Kafka producer closed with undelivered records; their senders get an error", metadata: ["records": "\(rd_kafka_outq_len(client.handle))"])
            }
            _ = rd_kafka_purge(client.handle, Int32(RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT))
            _ = rd_kafka_flush(client.handle, 1000)
            client.destroy()
        }
    }

    /// Replaces an unusable librdkafka instance; the old one's records fail and it is released.
    private func replaceClientIfNeeded() async {
        let old = client
        guard health.replaceRequested.exchange(false, ordering: .acquiringAndReleasing) || old.sink.fatal != nil else { return }
        guard !isClosed.load(ordering: .relaxed) else { return }
        let fresh: RdKafkaClient
        do {
            fresh = try Self.makeClient(configuration: configuration, health: health, room: room, logger: logger)
        } catch {
            logger.error("Could not recreate the Kafka producer", metadata: ["error": "\(error)"])
            return
        }
        let replaced = current.withLock { client -> Bool in
            guard client === old else { return false }
            client = fresh
            return true
        }
        guard replaced else {
            fresh.destroy()
            return
        }
        logger.warning(
            "Kafka producer recreated: the previous instance was fenced or hit a fatal error",
            metadata: ["error": "\(old.sink.fatal.map { "\($0)" } ?? "producer fenced")"])
        await retire(old, flushMilliseconds: 0)
    }

    /// Sends one record and waits for the broker's acknowledgement.
    @discardableResult
    package func send(_ record: KafkaProducerRecord) async throws(KafkaError) -> KafkaDeliveryReport {
        try await send([record])[0].get()
    }

    /// Sends records in order and waits for every acknowledgement; one result per record, in order.
    ///
    /// Records with the same key in the same topic keep their order (idempotent producer).
    /// If the producer closes or the task is cancelled while records wait for room in the local
    /// queue, those not yet enqueued fail at once (`shut_down`, `cancelled`); the enqueued ones
    /// still get their delivery report, unless the task is cancelled: then those still waiting
    /// fail as `cancelled` at once (the broker may yet store them).
    package func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] {
        guard !records.isEmpty else { return [] }
        let batch = DeliveryBatch(count: records.count)
        await replaceClientIfNeeded()
        let client = acquireClient()
        let clock = ContinuousClock()
        let deadline = clock.now + .milliseconds(configuration.deliveryTimeoutMilliseconds)
        var index = 0
        enqueueing: while index < records.count {
            if let stop = stopReason() {
                for rest in index..<records.count { batch.complete(rest, .failure(stop)) }
                break
            }
            let record = records[index]
            let ticket = Unmanaged.passRetained(DeliveryTicket(batch: batch, index: index, topic: record.topic)).toOpaque()
            while true {
                let mark = room.mark
                let err = enqueue(record, on: client, opaque: ticket)
                if err == RD_KAFKA_RESP_ERR_NO_ERROR { break }
                // The local queue is full: wait for a delivery report to free room, without
                // blocking a thread, as long as nobody closes the producer or cancels this task.
                // Every queued record gets its report within the delivery timeout, so a report
                // comes; the deadline is checked again after each one.
                if err == RD_KAFKA_RESP_ERR__QUEUE_FULL, clock.now < deadline, stopReason() == nil {
                    await room.wait(after: mark)
                    continue
                }
                Unmanaged<DeliveryTicket>.fromOpaque(ticket).release()
                if err == RD_KAFKA_RESP_ERR__QUEUE_FULL, let stop = stopReason() {
                    for rest in index..<records.count { batch.complete(rest, .failure(stop)) }
                    break enqueueing
                }
                let code: KafkaError.Code = err == RD_KAFKA_RESP_ERR__QUEUE_FULL ? .queueFull : .deliveryFailed
                batch.complete(index, .failure(KafkaError(code: code, err, detail: "topic \(record.topic)")))
                break
            }
            index += 1
        }
        client.activeSenders.leave()
        return await batch.results()
    }

    /// Why records not yet enqueued must fail now, if they must.
    private func stopReason() -> KafkaError? {
        if isClosed.load(ordering: .acquiring) { return .shutDownError }
        if Task.isCancelled { return KafkaError(code: .cancelled, reason: "the sending task was cancelled before the record was enqueued", isRetriable: true) }
        return nil
    }

    private func enqueue(_ record: KafkaProducerRecord, on client: RdKafkaClient, opaque: UnsafeMutableRawPointer) -> rd_kafka_resp_err_t {
        var headers: OpaquePointer?
        if !record.headers.isEmpty {
            headers = rd_kafka_headers_new(record.headers.count)
            for header in record.headers {
                if let value = header.value {
                    value.withUnsafeBytes { bytes in
                        _ = rd_kafka_header_add(headers, header.name, -1, bytes.baseAddress, bytes.count)
                    }
                } else {
                    _ = rd_kafka_header_add(headers, header.name, -1, nil, 0)
                }
            }
        }
        let err = record.value.withUnsafeBytes { value in
            withOptionalBytes(record.key) { key in
                crdkafka_produce(
                    client.handle, record.topic, record.partition ?? RD_KAFKA_PARTITION_UA,
                    key?.baseAddress, key?.count ?? 0, value.baseAddress, value.count, headers, opaque
                )
            }
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR, let headers { rd_kafka_headers_destroy(headers) }
        return err
    }

    /// Runs on librdkafka's background thread: resumes the tasks waiting for these records.
    private static func handleDeliveryReport(_ event: OpaquePointer, health: ProducerHealth) {
        while let message = rd_kafka_event_message_next(event) {
            guard let opaque = message.pointee._private else { continue }
            let ticket = Unmanaged<DeliveryTicket>.fromOpaque(opaque).takeRetainedValue()
            let err = message.pointee.err
            if err == RD_KAFKA_RESP_ERR_NO_ERROR {
                ticket.batch.complete(
                    ticket.index,
                    .success(KafkaDeliveryReport(topic: ticket.topic, partition: message.pointee.partition, offset: message.pointee.offset))
                )
            } else {
                if ProducerHealth.unusableAfter.contains(err) {
                    health.replaceRequested.store(true, ordering: .releasing)
                }
                ticket.batch.complete(ticket.index, .failure(KafkaError(code: .deliveryFailed, err, detail: "topic \(ticket.topic)")))
            }
        }
    }

    /// Waits until every enqueued record has its delivery report, or the timeout passes.
    package func flush(timeout: Duration) async throws(KafkaError) {
        guard !isClosed.load(ordering: .acquiring) else { throw .shutDownError }
        let client = acquireClient()
        defer { client.activeSenders.leave() }
        let milliseconds = timeout.clampedMilliseconds
        let err: rd_kafka_resp_err_t
        do {
            err = try await NIOThreadPool.singleton.runIfActive { rd_kafka_flush(client.handle, milliseconds) }
        } catch {
            throw .shutDownError
        }
        if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(code: .deliveryTimedOut, err, detail: "flush") }
    }

    /// Asks a broker for cluster metadata: succeeds when the cluster answers within the timeout.
    package func checkBroker(timeout: Duration = .seconds(2)) async throws(KafkaError) {
        guard !isClosed.load(ordering: .acquiring) else { throw .shutDownError }
        let client = acquireClient()
        defer { client.activeSenders.leave() }
        try await client.checkBroker(timeout: timeout)
    }

    /// Waits for graceful shutdown, then flushes and closes; cancelled (the shutdown ran out of
    /// time), closes without flushing.
    package func run() async throws {
        try? await gracefulShutdown()
        if Task.isCancelled {
            guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
            room.close()
            await retire(client, flushMilliseconds: 0)
        } else {
            await close()
        }
    }

    /// Stops accepting records, waits for outstanding deliveries (up to
    /// `closeFlushTimeoutMilliseconds`, by default the delivery timeout), fails whatever is left
    /// and releases the client. Idempotent.
    ///
    /// A record that fails here was never reported stored to its sender (its `send` returns the
    /// error), so nothing anyone was told is stored is lost.
    package func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        room.close()
        await retire(client, flushMilliseconds: Int32(clamping: configuration.closeFlushMilliseconds))
    }
}

/// Whether the current librdkafka instance must be replaced.
final class ProducerHealth: Sendable {
    let replaceRequested = Atomic<Bool>(false)

    /// Delivery errors after which an idempotent (non-transactional) producer stays broken.
    static let unusableAfter: Set<rd_kafka_resp_err_t> = [
        RD_KAFKA_RESP_ERR_PRODUCER_FENCED, RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH,
        RD_KAFKA_RESP_ERR_OUT_OF_ORDER_SEQUENCE_NUMBER, RD_KAFKA_RESP_ERR__FATAL,
    ]
}

/// One `send` call's records: collects their results and resumes the caller when all are in.
final class DeliveryBatch: Sendable {
    private struct State {
        var results: [Result<KafkaDeliveryReport, KafkaError>?]
        var remaining: Int
        var continuation: CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count, continuation: nil))
    }

    func complete(_ index: Int, _ result: Result<KafkaDeliveryReport, KafkaError>) {
        let resume = state.withLock {
            state -> (CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>, [Result<KafkaDeliveryReport, KafkaError>])? in
            state.results[index] = result
            state.remaining -= 1
            guard state.remaining == 0, let continuation = state.continuation else { return nil }
            state.continuation = nil
            return (continuation, state.results.map { $0! })
        }
        if let (continuation, results) = resume { continuation.resume(returning: results) }
    }

    /// Waits for every record's result. Cancelled, returns at once: records still without a
    /// report fail as `cancelled` (the broker may yet store them; their late reports are dropped).
    func results() async -> [Result<KafkaDeliveryReport, KafkaError>] {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> [Result<KafkaDeliveryReport, KafkaError>]? in
                    if state.remaining == 0 || Task.isCancelled { return Self.settled(state.results) }
                    state.continuation = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            let resume = state.withLock {
                state -> (CheckedContinuation<[Result<KafkaDeliveryReport, KafkaError>], Never>, [Result<KafkaDeliveryReport, KafkaError>])? in
                guard let continuation = state.continuation else { return nil }
                state.continuation = nil
                return (continuation, Self.settled(state.results))
            }
            if let (continuation, results) = resume { continuation.resume(returning: results) }
        }
    }

    private static func settled(_ results: [Result<KafkaDeliveryReport, KafkaError>?]) -> [Result<KafkaDeliveryReport, KafkaError>] {
        results.map { $0 ?? .failure(.cancelledWhileAwaitingReport) }
    }
}

extension KafkaError {
    static let cancelledWhileAwaitingReport = KafkaError(
        code: .cancelled, reason: "the sending task was cancelled while the record awaited the broker; it may still be stored", isRetriable: true
    )
}

/// Travels through librdkafka as the record's opaque pointer (retained while in flight).
final class DeliveryTicket {
    let batch: DeliveryBatch
    let index: Int
    let topic: String

    init(batch: DeliveryBatch, index: Int, topic: String) {
        self.batch = batch
        self.index = index
        self.topic = topic
    }
}

@inline(__always)
func withOptionalBytes<R>(_ bytes: [UInt8]?, _ body: (UnsafeRawBufferPointer?) -> R) -> R {
    guard let bytes else { return body(nil) }
    return bytes.withUnsafeBytes { body($0) }
}
