import Foundation
import Kafka
import Logging
import PushEvents
import PushStore

// What a `MessageSender` needs from the world around it, each as a small protocol: the broker's
// consumer and producer, the delivery controls, the throttle timelines and the data keys. The
// services pass the real ones (Kafka, PostgreSQL; conformances below); `MessageSenderTests`
// passes in-memory ones and drives the whole sender without a server.

/// The sender's member of its consumer group: batches of records, and the offsets of the
/// finished ones.
package protocol SenderConsumer: Sendable {
    /// The next batch (never empty); nil once the consumer is closed.
    func nextBatch() async throws -> [KafkaConsumerRecord]?
    /// Offsets to commit at the next `commit` (the next record to read, per partition).
    func storeOffsets(_ offsets: [KafkaTopicPartition: Int64]) throws
    func commit() async throws
    func close() async
}

/// Makes the sender's consumer; the sender's `handBack` answers each revocation before the
/// partitions go.
package typealias SenderConsumerFactory =
    @Sendable (KafkaConsumerConfiguration, _ revocation: @escaping KafkaConsumer.RevocationHandler, Logger) throws -> any SenderConsumer

/// Where the sender's events go (results, retries, quarantines, hand-backs).
package protocol SenderEventSink: Sendable {
    /// Stores `records` in order; per record, nil once the broker stored it, or why not.
    func store(_ records: [KafkaProducerRecord]) async -> [KafkaError?]
}

/// Where a record that is not a message goes, with the reason.
package protocol SenderDeadLetters: Sendable {
    func publish(_ letters: [(record: KafkaConsumerRecord, reason: String)]) async throws
}

/// The delivery controls an operator set (cancelled, paused), as last read.
package protocol SenderControls: Sendable {
    func state(of deliveryId: String) -> DeliveryControls.State
    /// Returns once the controls were read once (or the sender stops).
    func loaded() async
}

/// The send slots of throttled deliveries.
package protocol SenderThrottle: Sendable {
    /// The next slot of `deliveryId`'s timeline at `rate`.
    func slot(deliveryId: String, rate: ThrottleRate) async throws -> Date
}

/// The data keys that open sealed records.
package protocol SenderKeys: Sendable {
    /// The keys of `subjects` that exist (a subject without one was erased).
    func keys(of subjects: Set<UUID>) async throws -> [UUID: [UInt8]]
}

extension KafkaConsumer: SenderConsumer {
    /// The production factory: a `KafkaConsumer` of the configured group.
    package static let senderConsumer: SenderConsumerFactory = { configuration, revocation, logger in
        try KafkaConsumer(configuration: configuration, revocationHandler: revocation, logger: logger)
    }
}

extension KafkaProducer: SenderEventSink {
    package func store(_ records: [KafkaProducerRecord]) async -> [KafkaError?] {
        await send(records).map { result in
            if case .failure(let error) = result { error } else { nil }
        }
    }
}

extension DeadLetterPublisher: SenderDeadLetters {}
extension DeliveryControls: SenderControls {}
extension ThrottleSlots: SenderThrottle {}
extension MessageKeys: SenderKeys {}
