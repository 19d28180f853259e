/// A record header. Values are bytes; `stringValue` reads them as UTF-8.
package struct KafkaHeader: Sendable, Hashable {
    package var name: String
    package var value: [UInt8]?

    package init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    package init(name: String, string: String) {
        self.init(name: name, value: Array(string.utf8))
    }

    package var stringValue: String? { value.map { String(decoding: $0, as: UTF8.self) } }
}

extension Array where Element == KafkaHeader {
    /// The last header with this name, as UTF-8 (Kafka allows repeated names; the last wins).
    package func string(_ name: String) -> String? {
        last { $0.name == name }?.stringValue
    }
}

/// A topic partition, optionally with an offset.
package struct KafkaTopicPartition: Sendable, Hashable, CustomStringConvertible {
    package var topic: String
    package var partition: Int32

    package init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    package var description: String { "\(topic)[\(partition)]" }
}
