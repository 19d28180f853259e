/// A record header. Values are bytes; `stringValue` reads them as UTF-8.
public struct KafkaHeader: Sendable, Hashable {
    public var name: String
    public var value: [UInt8]?

    public init(name: String, value: [UInt8]?) {
        self.name = name
        self.value = value
    }

    public init(name: String, string: String) {
        self.init(name: name, value: Array(string.utf8))
    }

    public var stringValue: String? { value.map { String(decoding: $0, as: UTF8.self) } }
}

extension Array where Element == KafkaHeader {
    /// The last header with this name, as UTF-8 (Kafka allows repeated names; the last wins).
    public func string(_ name: String) -> String? {
        last { $0.name == name }?.stringValue
    }
}

/// A topic partition, optionally with an offset.
public struct KafkaTopicPartition: Sendable, Hashable, CustomStringConvertible {
    public var topic: String
    public var partition: Int32

    public init(topic: String, partition: Int32) {
        self.topic = topic
        self.partition = partition
    }

    public var description: String { "\(topic)[\(partition)]" }
}
