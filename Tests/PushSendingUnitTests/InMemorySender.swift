import Foundation
import Kafka
import Logging
import Metrics
import PushEvents
import PushStore
import ServiceLifecycle
import Synchronization
import Testing

@testable import PushSending

// A whole `MessageSender` in memory: its consumer, producer, dead letters, controls, throttle,
// keys and transport are the small fakes below, so a test drives real reading, sending, retries,
// publishing, offsets and shutdown without a broker, a database or a provider.

/// The consumer group member: the test appends batches; the sender's stored and committed
/// offsets are kept for the test to read.
final class MemoryConsumer: SenderConsumer, @unchecked Sendable {
    private let batches: AsyncStream<[KafkaConsumerRecord]>
    private let feed: AsyncStream<[KafkaConsumerRecord]>.Continuation
    // Only the sender's reading loop calls `nextBatch`, one call at a time.
    private var iterator: AsyncStream<[KafkaConsumerRecord]>.Iterator
    let stored = Mutex<[KafkaTopicPartition: Int64]>([:])
    let committed = Mutex<[KafkaTopicPartition: Int64]>([:])
    private let closed = Atomic(false)
    var isClosed: Bool { closed.load(ordering: .relaxed) }

    init() {
        (batches, feed) = AsyncStream.makeStream(of: [KafkaConsumerRecord].self)
        iterator = batches.makeAsyncIterator()
    }

    func deliver(_ batch: [KafkaConsumerRecord]) { feed.yield(batch) }

    func nextBatch() async throws -> [KafkaConsumerRecord]? { await iterator.next() }

    func storeOffsets(_ offsets: [KafkaTopicPartition: Int64]) throws {
        stored.withLock { $0.merge(offsets) { max($0, $1) } }
    }

    func commit() async throws {
        let offsets = stored.withLock { $0 }
        committed.withLock { $0 = offsets }
    }

    func close() async {
        closed.store(true, ordering: .relaxed)
        // What was stored is committed on close, as librdkafka does.
        try? await commit()
        feed.finish()
    }
}

/// The producer: every record stored, in order; `failing` records fail first (then succeed);
/// while `stalled`, a store waits (a broker that does not acknowledge).
final class MemorySink: SenderEventSink {
    let records = Mutex<[KafkaProducerRecord]>([])
    let failing = Mutex(0)
    let stalled = Mutex(false)

    func store(_ batch: [KafkaProducerRecord]) async -> [KafkaError?] {
        while stalled.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(2)) }
        return batch.map { record in
            let fail = failing.withLock { remaining in
                guard remaining > 0 else { return false }
                remaining -= 1
                return true
            }
            if fail { return KafkaError(code: .deliveryFailed, reason: "broker unavailable (test)", isRetriable: true) }
            records.withLock { $0.append(record) }
            return nil
        }
    }

    /// The events stored on `topic`, as JSON objects.
    func events(on topic: String) -> [[String: Any]] {
        records.withLock { $0 }.filter { $0.topic == topic }.compactMap { try? JSONSerialization.jsonObject(with: Data($0.value)) as? [String: Any] }
    }
}

final class MemoryDeadLetters: SenderDeadLetters {
    let letters = Mutex<[(offset: Int64, reason: String)]>([])

    func publish(_ letters: [(record: KafkaConsumerRecord, reason: String)]) async throws {
        self.letters.withLock { $0 += letters.map { ($0.record.offset, $0.reason) } }
    }
}

final class MemoryControls: SenderControls {
    let states = Mutex<[String: DeliveryControls.State]>([:])

    func state(of deliveryId: String) -> DeliveryControls.State { states.withLock { $0[deliveryId] ?? .active } }
    func loaded() async {}
    func set(_ deliveryId: String, _ state: DeliveryControls.State) { states.withLock { $0[deliveryId] = state } }
}

/// One timeline per delivery, a slot every 1 / rate seconds from now.
final class MemoryThrottle: SenderThrottle {
    let last = Mutex<[String: Date]>([:])

    func slot(deliveryId: String, rate: ThrottleRate) async throws -> Date {
        last.withLock { last in
            let now = Date()
            let next = last[deliveryId].map { max(now, $0.addingTimeInterval(1 / Double(rate.perSecond))) } ?? now
            last[deliveryId] = next
            return next
        }
    }
}

struct MemoryKeys: SenderKeys {
    var keys: [UUID: [UInt8]] = [:]
    func keys(of subjects: Set<UUID>) async throws -> [UUID: [UInt8]] { keys.filter { subjects.contains($0.key) } }
}

/// The provider: answers each send with `answer(message)`, at once; nil keeps the send in flight
/// until `release` answers it.
final class MemoryTransport: MessageTransport {
    typealias Message = APNSMessagePlanned
    let provider = "apns"
    let answer: @Sendable (APNSMessagePlanned) -> SendOutcome?
    /// Every send written to the provider (not withdrawn), in order.
    let sent = Mutex<[APNSMessagePlanned]>([])
    let inFlight = Mutex<[(@Sendable (SendOutcome) -> Void)]>([])

    init(answer: @escaping @Sendable (APNSMessagePlanned) -> SendOutcome? = { .sent(providerMessageId: "apns-\($0.messageId)") }) {
        self.answer = answer
    }

    func send(
        _ message: APNSMessagePlanned, waiting: WaitingSends, stillWanted: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SendOutcome) -> Void
    ) {
        guard stillWanted() else { return completion(.withdrawn) }
        sent.withLock { $0.append(message) }
        if let outcome = answer(message) { completion(outcome) } else { inFlight.withLock { $0.append(completion) } }
    }

    /// Answers every send kept in flight with `outcome`.
    func release(_ outcome: SendOutcome) {
        for completion in inFlight.withLock({ held in
            defer { held = [] }
            return held
        }) { completion(outcome) }
    }
}

/// A `MessageSender` over the fakes, running in a service group until `stop()`.
final class InMemorySender: Sendable {
    static let topics = MessageSender<MemoryTransport>.Topics(
        messages: "push.apns.messages", retries: "push.apns.retries", throttled: "push.apns.throttled", results: "push.message-results",
        subscriptions: "push.subscriptions")

    let consumer = MemoryConsumer()
    let sink = MemorySink()
    let deadLetters = MemoryDeadLetters()
    let controls = MemoryControls()
    let transport: MemoryTransport
    let sender: MessageSender<MemoryTransport>
    let group: ServiceGroup
    private let offsets = Mutex<[Int32: Int64]>([:])

    init(
        transport: MemoryTransport = MemoryTransport(), keys: MemoryKeys = MemoryKeys(), settings: SenderSettings? = nil,
        metrics: any MetricsFactory = MetricsSystem.factory
    ) {
        self.transport = transport
        var settings = settings ?? SenderSettings(group: "test-sender", maxInFlight: 16, maxHeld: 64, retryBaseMilliseconds: 1_000)
        settings.commitIntervalMilliseconds = 20
        let logger = Logger(label: "in-memory-sender")
        let consumer = consumer
        sender = MessageSender(
            transport: transport, settings: settings, topics: Self.topics, producer: sink, deadLetters: deadLetters,
            suspensions: CredentialSuspensions(), controls: controls, throttle: MemoryThrottle(), keys: keys,
            consumer: KafkaConsumerConfiguration(client: KafkaClientConfiguration(bootstrapServers: "memory"), groupID: "test-sender", topics: []),
            makeConsumer: { _, _, _ in consumer }, logger: logger, metricsFactory: metrics)
        group = ServiceGroup(configuration: .init(services: [.init(service: sender)], logger: logger))
    }

    /// Delivers `messages` as one batch of the message topic's partition `partition`.
    func deliver(_ messages: [APNSMessagePlanned], partition: Int32 = 0, topic: String = InMemorySender.topics.messages) throws {
        let records = try messages.map { message in
            let envelope = EventEnvelope(key: message.recordKey, payload: message, correlationId: message.deliveryId)
            let produced = try KafkaProducerRecord(topic: topic, event: envelope)
            let offset = offsets.withLock { offsets in
                defer { offsets[partition, default: 0] += 1 }
                return offsets[partition, default: 0]
            }
            return KafkaConsumerRecord(
                topic: topic, partition: partition, offset: offset, key: produced.key, value: produced.value, headers: produced.headers)
        }
        consumer.deliver(records)
    }

    /// Raw values as one batch (a record that is not a message).
    func deliverRaw(_ value: String, partition: Int32 = 0) {
        let offset = offsets.withLock { offsets in
            defer { offsets[partition, default: 0] += 1 }
            return offsets[partition, default: 0]
        }
        consumer.deliver([
            KafkaConsumerRecord(topic: Self.topics.messages, partition: partition, offset: offset, key: nil, value: Array(value.utf8))
        ])
    }

    /// The types of the result events stored, by message id.
    func results() -> [UUID: [String]] {
        var results: [UUID: [String]] = [:]
        for event in sink.events(on: Self.topics.results) {
            guard let type = event["type"] as? String, let data = event["data"] as? [String: Any],
                let id = ((data["message"] as? [String: Any])?["messageId"] as? String).flatMap(UUID.init(uuidString:))
            else { continue }
            results[id, default: []].append(type)
        }
        return results
    }

    /// The messages written back to `topic` (retries, deferrals, hand-backs).
    func requeued(on topic: String = InMemorySender.topics.retries) -> [APNSMessagePlanned] {
        sink.records.withLock { $0 }.filter { $0.topic == topic }.compactMap { record in
            guard case .known(let message, _) = try? APNSMessagePlanned.decodeRecord(record.value) else { return nil }
            return message
        }
    }

    func stored(partition: Int32 = 0) -> Int64? {
        consumer.stored.withLock { $0[KafkaTopicPartition(topic: Self.topics.messages, partition: partition)] }
    }

    /// Waits (at most 5 s) until `condition` holds.
    func until(_ what: Comment, _ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else {
                Issue.record("timed out waiting: \(what)")
                return
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    static func message(
        deliveryId: String = "d1", validFor: TimeInterval = 3_600, attempt: Int = 1, notBefore: Date? = nil, throttlePerSecond: Int? = nil
    ) -> APNSMessagePlanned {
        let id = UUID()
        return APNSMessagePlanned(
            messageId: id, broadLogId: 1, deliveryId: deliveryId, appId: UUID(), registrationToken: String(repeating: "ab", count: 32),
            environment: "production", credential: nil, topic: "com.example.app", pushType: "alert", priority: 10, collapseId: nil,
            payload: #"{"aps":{"alert":"hi"}}"#, validUntil: Date().addingTimeInterval(validFor), attempt: attempt, plannedAt: Date(),
            notBefore: notBefore, throttlePerSecond: throttlePerSecond)
    }
}
