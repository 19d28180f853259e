import CRdKafka
import Logging
import NIOPosix
import PushWire

/// Reads a topic back outside any consumer group: every partition from a start offset to its
/// current end.
///
/// For reconciliation, not for streaming: a writer that recorded the end offsets before
/// producing can, after a crash, read back what reached the log since then.
/// No offsets are committed and no group is joined.
package final class KafkaLogReader: Sendable {
    private let configuration: KafkaClientConfiguration
    private let logger: Logger

    package init(configuration: KafkaClientConfiguration, logger: Logger) {
        self.configuration = configuration
        self.logger = logger
    }

    /// The next offset to be written (the high watermark) of every partition of `topic`.
    package func endOffsets(topic: String, timeout: Duration = .seconds(10)) async throws(KafkaError) -> [Int32: Int64] {
        try await watermarks(topic: topic, timeout: timeout).mapValues(\.high)
    }

    /// The first offset still held (`low`) and the next offset to be written (`high`) of every
    /// partition of `topic`: a partition holds `high - low` records.
    package func watermarks(topic: String, timeout: Duration = .seconds(10)) async throws(KafkaError) -> [Int32: (low: Int64, high: Int64)] {
        let milliseconds = timeout.clampedMilliseconds
        let properties = configuration.baseProperties.merging(configuration.properties) { $1 }
        let logger = self.logger
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                let client = try RdKafkaClient(type: RD_KAFKA_PRODUCER, properties: properties, events: 0, sink: RdKafkaEventSink(logger: logger))
                defer { client.destroy() }
                let count = try Self.partitionCount(client: client, topic: topic, timeoutMilliseconds: milliseconds)
                var marks: [Int32: (low: Int64, high: Int64)] = [:]
                for partition in 0..<count {
                    var low: Int64 = 0
                    var high: Int64 = 0
                    let err = rd_kafka_query_watermark_offsets(client.handle, topic, partition, &low, &high, milliseconds)
                    guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                        throw KafkaError(code: .consumer, err, detail: "watermarks of \(topic)[\(partition)]")
                    }
                    marks[partition] = (low, high)
                }
                return marks
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw .shutDownError
        }
    }

    /// Calls `body` with the records of every partition of `topic`, from `start` (the
    /// beginning for a partition not named) up to the partition's end at the time of reading,
    /// in offset order per partition.
    ///
    /// The end is the high watermark the broker reports with fetched data (the one that came
    /// with a partition's first record, or partition EOF), so a topic still being written is
    /// read to where it stood, not chased. It is not the answer to a ListOffsets request:
    /// Tansu 0.6 answers ListOffsets(latest) with the base offset of the last batch + 1, which
    /// is short of the end when that batch holds several records. (`endOffsets` may therefore
    /// be low on Tansu, which is safe for a mark taken before writing: reading back from it
    /// reads a little more, never less.)
    ///
    /// `atEnd` is called once per partition when it has been read to that end, before `body`
    /// receives the batch that holds its last records: a caller that orders records across
    /// partitions learns the ends from the reader, not from `endOffsets`.
    ///
    /// Polling runs on a thread of the reader's own (librdkafka's calls block); `body` runs in
    /// the caller's task, so it may await (store what it read, publish) without holding that
    /// thread, and the next batch is polled once it returns: the back-pressure.
    package func read(
        topic: String, from start: [Int32: Int64] = [:],
        timeout: Duration = .seconds(60),
        atEnd: @escaping @Sendable (Int32) -> Void = { _ in },
        _ body: @Sendable ([KafkaConsumerRecord]) async throws -> Void
    ) async throws {
        var properties = configuration.baseProperties.merging(configuration.properties) { $1 }
        // A group id is needed for the consumer queue; assign() never joins the group.
        properties["group.id"] = "push-log-reader"
        properties["enable.auto.commit"] = "false"
        properties["enable.auto.offset.store"] = "false"
        properties["enable.partition.eof"] = "true"
        properties["fetch.queue.backoff.ms"] = "10"
        let logger = self.logger
        let deadline = ContinuousClock.now + timeout
        let thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
        defer { thread.shutdownGracefully { _ in } }
        let reading = try await thread.runIfActive { [properties] in
            try Reading(properties: properties, topic: topic, start: start, logger: logger)
        }
        do {
            while true {
                let (records, ended, done) = try await thread.runIfActive { try reading.poll(until: deadline) }
                ended.forEach(atEnd)
                if !records.isEmpty { try await body(records) }
                if done { break }
            }
        } catch {
            _ = try? await thread.runIfActive { reading.close() }
            throw error
        }
        _ = try? await thread.runIfActive { reading.close() }
    }

    /// One read back's client and progress. Used from the reader's thread only, one call at a
    /// time (the caller awaits each), hence unchecked.
    private final class Reading: @unchecked Sendable {
        let client: RdKafkaClient
        let topic: String
        let logger: Logger
        var remaining: Set<Int32>
        /// Each partition's end, fixed at its first fetched record: the high watermark of the
        /// fetch response that carried it (librdkafka caches it per partition). Partition EOF
        /// alone is not enough while a writer keeps appending: the consumer can trail a moving
        /// end for as long as the writes go on.
        var ends: [Int32: Int64] = [:]

        init(properties: [String: String], topic: String, start: [Int32: Int64], logger: Logger) throws {
            client = try RdKafkaClient(type: RD_KAFKA_CONSUMER, properties: properties, events: 0, sink: RdKafkaEventSink(logger: logger))
            self.topic = topic
            self.logger = logger
            do {
                let count = try KafkaLogReader.partitionCount(client: client, topic: topic, timeoutMilliseconds: 10_000)
                let list = rd_kafka_topic_partition_list_new(count)
                defer { rd_kafka_topic_partition_list_destroy(list) }
                for partition in 0..<count {
                    rd_kafka_topic_partition_list_add(list, topic, partition)?.pointee.offset = start[partition] ?? KafkaOffset.beginning
                }
                let err = rd_kafka_assign(client.handle, list)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else { throw KafkaError(code: .consumer, err, detail: "assign") }
                remaining = Set(0..<count)
            } catch {
                client.destroy()
                throw error
            }
        }

        /// Up to 10,000 records, the partitions read to their end meanwhile, and whether every
        /// partition is.
        func poll(until deadline: ContinuousClock.Instant) throws -> (records: [KafkaConsumerRecord], ended: [Int32], done: Bool) {
            guard !remaining.isEmpty else { return ([], [], true) }
            guard ContinuousClock.now < deadline else {
                throw KafkaError(code: .consumer, reason: "reading \(topic) back did not reach the end of every partition in time", isRetriable: true)
            }
            var records: [KafkaConsumerRecord] = []
            var ended: [Int32] = []
            var timeout: Int32 = 100
            // rd_kafka_consumer_poll returns partition EOF as a message with that error.
            while records.count < 10_000, let message = rd_kafka_consumer_poll(client.handle, timeout) {
                defer { rd_kafka_message_destroy(message) }
                timeout = 0
                let err = message.pointee.err
                if err == RD_KAFKA_RESP_ERR__PARTITION_EOF {
                    if let partition = remaining.remove(message.pointee.partition) { ended.append(partition) }
                    continue
                }
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                    logger.warning("Kafka fetch error while reading back", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
                    continue
                }
                let partition = message.pointee.partition
                if ends[partition] == nil {
                    var low: Int64 = 0
                    var high: Int64 = 0
                    if rd_kafka_get_watermark_offsets(client.handle, topic, partition, &low, &high) == RD_KAFKA_RESP_ERR_NO_ERROR, high > 0 {
                        ends[partition] = high
                    }
                }
                records.append(KafkaConsumer.record(from: message))
                if let end = ends[partition], message.pointee.offset + 1 >= end, remaining.remove(partition) != nil { ended.append(partition) }
            }
            return (records, ended, remaining.isEmpty)
        }

        func close() {
            _ = rd_kafka_assign(client.handle, nil)
            client.destroy()
        }
    }

    fileprivate static func partitionCount(client: RdKafkaClient, topic: String, timeoutMilliseconds: Int32) throws -> Int32 {
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
