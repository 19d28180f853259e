import Kafka
import PushEvents

extension KafkaProducerRecord {
    /// The record of an event: keyed by its aggregate, the envelope as value, and a `ce_type`
    /// header naming the type (a CloudEvents-style hint; consumers read the envelope).
    package init<Payload: PushEvent>(topic: String, event: EventEnvelope<Payload>) throws {
        self.init(
            topic: topic, key: event.metadata.key, value: try event.encoded(),
            headers: [KafkaHeader(name: "ce_type", string: Payload.eventType)]
        )
    }
}
