/// A record to send. `partition` nil lets the partitioner choose from the key.
package struct KafkaProducerRecord: Sendable, Hashable {
    package var topic: String
    package var key: [UInt8]?
    package var value: [UInt8]
    package var headers: [KafkaHeader]
    package var partition: Int32?

    package init(topic: String, key: [UInt8]?, value: [UInt8], headers: [KafkaHeader] = [], partition: Int32? = nil) {
        self.topic = topic
        self.key = key
        self.value = value
        self.headers = headers
        self.partition = partition
    }

    package init(topic: String, key: String, value: [UInt8], headers: [KafkaHeader] = []) {
        self.init(topic: topic, key: Array(key.utf8), value: value, headers: headers)
    }
}

/// The broker's acknowledgement of one record: where it was stored.
package struct KafkaDeliveryReport: Sendable, Hashable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64
}

/// A record read by a consumer.
package struct KafkaConsumerRecord: Sendable, Hashable {
    package var topic: String
    package var partition: Int32
    package var offset: Int64
    package var key: [UInt8]?
    package var value: [UInt8]
    package var headers: [KafkaHeader]
    /// Milliseconds since the epoch (create or log-append time), when the broker sent one.
    package var timestampMilliseconds: Int64?

    package init(
        topic: String, partition: Int32, offset: Int64, key: [UInt8]?, value: [UInt8],
        headers: [KafkaHeader] = [], timestampMilliseconds: Int64? = nil
    ) {
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.key = key
        self.value = value
        self.headers = headers
        self.timestampMilliseconds = timestampMilliseconds
    }

    package var topicPartition: KafkaTopicPartition { KafkaTopicPartition(topic: topic, partition: partition) }
    package var keyString: String? { key.map { String(decoding: $0, as: UTF8.self) } }
}
