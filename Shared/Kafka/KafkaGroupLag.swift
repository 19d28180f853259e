import CRdKafka
import Logging
import Metrics
import NIOPosix
import ServiceLifecycle
import Synchronization

/// The lag of consumer groups seen from outside them: each group's committed offsets against
/// its topics' ends (`push_consumer_group_lag{group, topic}`), every `interval`.
///
/// `push_consumer_lag` is exported by a group's own members, so it disappears with them: a
/// sender whose every instance crashed shows no lag at all while its backlog grows. This
/// monitor runs in another service and reads what the broker keeps for the group whether or not
/// it has members, the committed offsets (OffsetFetch), as Kafka's own
/// `kafka-consumer-groups --describe` does. It never joins a group: each group is read through a
/// client that has the group's id and subscribes to nothing.
///
/// A partition the group has no committed offset for counts every record it retains (a group
/// that never ran owes all of them). The figure trails a live group's by up to its commit
/// interval; between refreshes it stays as last read. A round that fails (the broker is away)
/// leaves the gauges as they were and logs at debug; the next round tries again.
package final class KafkaGroupLag: Service, Sendable {
    /// A group and the topics it reads.
    package struct Group: Sendable, Hashable {
        package var name: String
        package var topics: [String]

        package init(name: String, topics: [String]) {
            self.name = name
            self.topics = topics
        }
    }

    private let groups: [Group]
    private let interval: Duration
    private let logger: Logger
    private let metricsFactory: any MetricsFactory
    private let clients: [String: RdKafkaClient]
    /// Blocking librdkafka calls run here, never on Swift's cooperative pool.
    private let thread: NIOThreadPool
    private let gauges = Mutex<[String: Gauge]>([:])

    /// How long one broker request of a round may wait.
    private static let requestTimeoutMilliseconds: Int32 = 5_000

    package init(
        client: KafkaClientConfiguration, groups: [Group], interval: Duration = .seconds(15), metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger
    ) throws(KafkaError) {
        self.groups = groups
        self.interval = interval
        self.logger = logger
        self.metricsFactory = metricsFactory
        var clients: [String: RdKafkaClient] = [:]
        for group in groups where clients[group.name] == nil {
            var properties = client.baseProperties.merging(client.properties) { $1 }
            properties["group.id"] = group.name
            properties["enable.auto.commit"] = "false"
            properties["enable.auto.offset.store"] = "false"
            clients[group.name] = try RdKafkaClient(type: RD_KAFKA_CONSUMER, properties: properties, events: 0, sink: RdKafkaEventSink(logger: logger))
        }
        self.clients = clients
        thread = NIOThreadPool(numberOfThreads: 1)
        thread.start()
    }

    /// Refreshes the gauges every `interval` until graceful shutdown, then releases the clients.
    package func run() async throws {
        try? await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                _ = try? await self.refresh()
                try await Task.sleep(for: self.interval)
            }
        }
        await close()
    }

    /// One round: every group's lag per topic, also exported. A group whose topics the broker
    /// does not know is left out.
    @discardableResult
    package func refresh() async throws -> [String: [String: Int64]] {
        let (groups, clients, logger) = (self.groups, self.clients, self.logger)
        let lags = try await thread.runIfActive { Self.read(groups: groups, clients: clients, logger: logger) }
        for (group, topics) in lags {
            for (topic, lag) in topics { gauge(group: group, topic: topic).record(lag) }
        }
        return lags
    }

    private func gauge(group: String, topic: String) -> Gauge {
        gauges.withLock { gauges in
            let key = group + "\u{0}" + topic
            if let gauge = gauges[key] { return gauge }
            let gauge = Gauge(label: "push_consumer_group_lag", dimensions: [("group", group), ("topic", topic)], factory: metricsFactory)
            gauges[key] = gauge
            return gauge
        }
    }

    /// Runs on the monitor's thread.
    private static func read(groups: [Group], clients: [String: RdKafkaClient], logger: Logger) -> [String: [String: Int64]] {
        guard let any = clients.values.first else { return [:] }
        // Partition counts, then each partition's end once per round (groups share topics).
        var metadata: UnsafePointer<rd_kafka_metadata>?
        let err = rd_kafka_metadata(any.handle, 1, nil, &metadata, requestTimeoutMilliseconds)
        guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
            logger.debug("Group lag not refreshed: no metadata", metadata: ["error": "\(KafkaError(code: .consumer, err))"])
            return [:]
        }
        var partitions: [String: Int32] = [:]
        for index in 0..<Int(metadata.pointee.topic_cnt) {
            let topic = metadata.pointee.topics[index]
            if topic.err == RD_KAFKA_RESP_ERR_NO_ERROR { partitions[String(cString: topic.topic)] = topic.partition_cnt }
        }
        rd_kafka_metadata_destroy(metadata)

        var ends: [KafkaTopicPartition: (low: Int64, high: Int64)] = [:]
        var result: [String: [String: Int64]] = [:]
        for group in groups {
            guard let client = clients[group.name] else { continue }
            let topics = group.topics.filter { partitions[$0] != nil }
            guard !topics.isEmpty else { continue }
            guard let list = rd_kafka_topic_partition_list_new(Int32(topics.count)) else { continue }
            defer { rd_kafka_topic_partition_list_destroy(list) }
            for topic in topics {
                for partition in 0..<partitions[topic]! { rd_kafka_topic_partition_list_add(list, topic, partition) }
            }
            let committedErr = rd_kafka_committed(client.handle, list, requestTimeoutMilliseconds)
            guard committedErr == RD_KAFKA_RESP_ERR_NO_ERROR else {
                logger.debug(
                    "Group lag not refreshed: committed offsets unread",
                    metadata: ["group": "\(group.name)", "error": "\(KafkaError(code: .consumer, committedErr))"])
                continue
            }
            var lags: [String: Int64] = [:]
            for index in 0..<Int(list.pointee.cnt) {
                let entry = list.pointee.elems[index]
                let partition = KafkaTopicPartition(topic: String(cString: entry.topic), partition: entry.partition)
                if ends[partition] == nil {
                    var low: Int64 = 0
                    var high: Int64 = 0
                    guard
                        rd_kafka_query_watermark_offsets(client.handle, partition.topic, partition.partition, &low, &high, requestTimeoutMilliseconds)
                            == RD_KAFKA_RESP_ERR_NO_ERROR
                    else { continue }
                    ends[partition] = (low, high)
                }
                let (low, high) = ends[partition]!
                let from = entry.err == RD_KAFKA_RESP_ERR_NO_ERROR && entry.offset >= 0 ? entry.offset : low
                lags[partition.topic, default: 0] += max(0, high - from)
            }
            result[group.name, default: [:]].merge(lags) { $0 + $1 }
        }
        return result
    }

    private func close() async {
        let clients = Array(self.clients.values)
        _ = try? await thread.runIfActive { for client in clients { client.destroy() } }
        try? await thread.shutdownGracefully()
    }
}
