import CRdKafka
import Logging
import NIOPosix

/// Reads a bounded stretch of a topic outside any consumer group: for each partition, from a
/// start offset up to (not including) an end offset.
///
/// For reconciliation, not for streaming: a writer that recorded the end offsets before
/// producing can, after a crash, read back exactly what reached the log since then.
/// No offsets are committed and no group is joined.
public final class KafkaLogReader: Sendable {
    private let configuration: KafkaClientConfiguration
    private let logger: Logger

    public init(configuration: KafkaClientConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The next offset to be written (the high watermark) of every partition of `topic`.
    public func endOffsets(topic: String, timeout: Duration = .seconds(10)) async throws(KafkaError) -> [Int32: Int64] {
        let milliseconds = Int32(clamping: timeout.components.seconds * 1000)
        let properties = configuration.baseProperties.merging(configuration.properties) { $1 }
        let logger = self.logger
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                let client = try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: properties, events: 0, sink: RdKafkaEventSink(logger: logger))
                defer { client.destroy() }
                let count = try Self.partitionCount(client: client, topic: topic, timeoutMilliseconds: milliseconds)
                var ends: [Int32: Int64] = [:]
                for partition in 0..<count {
                    var low: Int64 = 0
                    var high: Int64 = 0
                    let err = rd_kafka_query_watermark_offsets(client.handle, topic, partition, &low, &high, milliseconds)
                    guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                        throw KafkaError(code: .consumer, err, detail: "watermarks of \(topic)[\(partition)]")
                    }
                    ends[partition] = high
                }
                return ends
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw .shutDownError
        }
    }

    /// Calls `body` with the records of `topic` from `start` up to `end` (per partition, end
    /// excluded), in offset order per partition. Partitions where start >= end are not read.
    public func read(
        topic: String, from start: [Int32: Int64], to end: [Int32: Int64],
        timeout: Duration = .seconds(60),
        _ body: @escaping @Sendable ([KafkaConsumerRecord]) throws -> Void
    ) async throws {
        let wanted = end.filter { partition, endOffset in endOffset > (start[partition] ?? 0) }
        guard !wanted.isEmpty else { return }
        var properties = configuration.baseProperties.merging(configuration.properties) { $1 }
        // A group id is needed for the consumer queue; assign() never joins the group.
        properties["group.id"] = "push-log-reader"
        properties["enable.auto.commit"] = "false"
        properties["enable.auto.offset.store"] = "false"
        properties["enable.partition.eof"] = "false"
        properties["fetch.queue.backoff.ms"] = "10"
        let logger = self.logger
        let deadline = ContinuousClock.now + timeout
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        defer { thread.shutdownGracefully { _ in } }
        try await thread.runIfActive { [properties] in
            let client = try RdKafkaClient(type: RD_KAFKA_CONSUMER, properties: properties, events: RD_KAFKA_EVENT_FETCH, sink: RdKafkaEventSink(logger: logger))
            defer { client.destroy() }
            guard let queue = rd_kafka_queue_get_consumer(client.handle) else {
                throw KafkaError(code: .consumer, reason: "no consumer queue", isRetriable: false)
            }
            defer { rd_kafka_queue_destroy(queue) }
            let list = rd_kafka_topic_partition_list_new(Int32(wanted.count))
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for partition in wanted.keys.sorted() {
                rd_kafka_topic_partition_list_add(list, topic, partition)?.pointee.offset = start[partition] ?? 0
            }
            var err = rd_kafka_assign(client.handle, list)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(code: .consumer, err, detail: "assign") }
            defer { _ = rd_kafka_assign(client.handle, nil) }

            var remaining = Set(wanted.keys)
            while !remaining.isEmpty {
                guard ContinuousClock.now < deadline else {
                    throw KafkaError(code: .consumer, reason: "reading \(topic) back did not reach the end offsets in time", isRetriable: true)
                }
                guard let event = rd_kafka_queue_poll(queue, 100) else { continue }
                defer { rd_kafka_event_destroy(event) }
                guard rd_kafka_event_type(event) == RD_KAFKA_EVENT_FETCH else { continue }
                var records: [KafkaConsumerRecord] = []
                while let message = rd_kafka_event_message_next(event) {
                    err = message.pointee.err
                    guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                        logger.warning("Kafka fetch error while reading back", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
                        continue
                    }
                    let record = KafkaConsumer.record(from: message)
                    guard let stop = wanted[record.partition], record.offset < stop else { continue }
                    records.append(record)
                    if record.offset + 1 >= stop { remaining.remove(record.partition) }
                }
                if !records.isEmpty { try body(records) }
            }
        }
    }

    private static func partitionCount(client: RdKafkaClient, topic: String, timeoutMilliseconds: Int32) throws -> Int32 {
        guard let topicHandle = rd_kafka_topic_new(client.handle, topic, nil) else {
            throw KafkaError(code: .admin, reason: "topic handle for \(topic)", isRetriable: false)
        }
        defer { rd_kafka_topic_destroy(topicHandle) }
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(client.handle, 0, topicHandle, &metadata, timeoutMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else { throw KafkaError(code: .admin, err, detail: "metadata of \(topic)") }
        defer { rd_kafka_metadata_destroy(metadata) }
        guard metadata.pointee.topic_cnt == 1, metadata.pointee.topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR else {
            let topicErr = metadata.pointee.topic_cnt == 1 ? metadata.pointee.topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
            throw KafkaError(code: .admin, topicErr, detail: "metadata of \(topic)")
        }
        return metadata.pointee.topics[0].partition_cnt
    }
}
