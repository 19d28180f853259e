import Foundation
import Kafka
import PushEvents

/// Sends a record that cannot be processed to its dead-letter topic (`<topic>.dlq`), unchanged,
/// with headers that say where it came from and why it was set aside:
/// `dlq.source.topic`, `dlq.source.partition`, `dlq.source.offset`, `dlq.consumer.group`,
/// `dlq.reason`, `dlq.failed.at` (ISO 8601).
package struct DeadLetterPublisher: Sendable {
    package let producer: KafkaProducer
    package let catalog: TopicCatalog
    package let group: String

    package init(producer: KafkaProducer, catalog: TopicCatalog, group: String) {
        self.producer = producer
        self.catalog = catalog
        self.group = group
    }

    /// Publishes all of them and returns once the broker stored every one (throws otherwise, so
    /// the caller does not advance past records that were not set aside).
    package func publish(_ letters: [(record: KafkaConsumerRecord, reason: String)]) async throws {
        guard !letters.isEmpty else { return }
        let now = Date().formatted(.iso8601)
        let records = letters.map { letter in
            KafkaProducerRecord(
                topic: catalog.dlq(for: letter.record.topic),
                key: letter.record.key,
                value: letter.record.value,
                headers: letter.record.headers + [
                    KafkaHeader(name: "dlq.source.topic", string: letter.record.topic),
                    KafkaHeader(name: "dlq.source.partition", string: String(letter.record.partition)),
                    KafkaHeader(name: "dlq.source.offset", string: String(letter.record.offset)),
                    KafkaHeader(name: "dlq.consumer.group", string: group),
                    KafkaHeader(name: "dlq.reason", string: letter.reason),
                    KafkaHeader(name: "dlq.failed.at", string: now),
                ]
            )
        }
        for result in await producer.send(records) {
            _ = try result.get()
        }
    }
}
