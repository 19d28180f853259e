import CRdKafka
import Logging
import NIOPosix
import PushWire

/// A topic to create: name, partition count, replication factor and topic configuration
/// (for example `retention.ms` or `cleanup.policy`).
package struct KafkaTopicSpecification: Sendable, Hashable {
    package var name: String
    package var partitions: Int
    /// -1 takes the broker's `default.replication.factor`.
    package var replicationFactor: Int
    package var config: [String: String]

    package init(name: String, partitions: Int, replicationFactor: Int = -1, config: [String: String] = [:]) {
        self.name = name
        self.partitions = partitions
        self.replicationFactor = replicationFactor
        self.config = config
    }
}

/// What creating one topic did.
package enum KafkaTopicCreation: Sendable, Hashable {
    case created
    case alreadyExisted
}

/// Topic administration over librdkafka's admin API.
package final class KafkaAdmin: Sendable {
    let client: RdKafkaClient

    package init(configuration: KafkaClientConfiguration, logger: Logger) throws(KafkaError) {
        client = try RdKafkaClient(
            type: RD_KAFKA_PRODUCER, properties: configuration.baseProperties.merging(configuration.properties) { $1 }, events: 0,
            sink: RdKafkaEventSink(logger: logger))
        KafkaRuntime.warnIfTooOld(logger: logger)
    }

    /// Creates the topics that do not exist yet; an existing topic is left as it is (its
    /// partition count is not changed: adding partitions would move keys).
    package func createTopics(_ topics: [KafkaTopicSpecification], timeout: Duration = .seconds(30)) async throws(KafkaError) -> [String: KafkaTopicCreation] {
        guard !topics.isEmpty else { return [:] }
        let milliseconds = timeout.clampedMilliseconds
        let client = self.client
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                try Self.createTopicsBlocking(client: client, topics: topics, timeoutMilliseconds: milliseconds)
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw .shutDownError
        }
    }

    private static func createTopicsBlocking(client: RdKafkaClient, topics: [KafkaTopicSpecification], timeoutMilliseconds: Int32) throws -> [String:
        KafkaTopicCreation]
    {
        var errorText = [CChar](repeating: 0, count: 512)
        var newTopics: [OpaquePointer?] = []
        defer { newTopics.forEach { rd_kafka_NewTopic_destroy($0) } }
        for topic in topics {
            guard let newTopic = rd_kafka_NewTopic_new(topic.name, Int32(topic.partitions), Int32(topic.replicationFactor), &errorText, errorText.count) else {
                throw KafkaError(code: .admin, reason: "topic \(topic.name): \(errorBufferText(errorText))", isRetriable: false)
            }
            newTopics.append(newTopic)
            for (name, value) in topic.config.sorted(by: { $0.key < $1.key }) {
                let err = rd_kafka_NewTopic_set_config(newTopic, name, value)
                if err != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(code: .admin, err, detail: "topic \(topic.name) config \(name)") }
            }
        }
        let queue = rd_kafka_queue_new(client.handle)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(client.handle, RD_KAFKA_ADMIN_OP_CREATETOPICS)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMilliseconds, &errorText, errorText.count)
        _ = rd_kafka_AdminOptions_set_operation_timeout(options, timeoutMilliseconds, &errorText, errorText.count)

        newTopics.withUnsafeMutableBufferPointer { buffer in
            rd_kafka_CreateTopics(client.handle, buffer.baseAddress, buffer.count, options, queue)
        }
        guard let event = rd_kafka_queue_poll(queue, timeoutMilliseconds + 1000) else {
            throw KafkaError(code: .admin, rdKafkaCode: RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, reason: "CreateTopics timed out", isRetriable: true)
        }
        defer { rd_kafka_event_destroy(event) }
        let err = rd_kafka_event_error(event)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            throw KafkaError(code: .admin, err, detail: rd_kafka_event_error_string(event).map { String(cString: $0) })
        }
        guard let result = rd_kafka_event_CreateTopics_result(event) else {
            throw KafkaError(code: .admin, reason: "unexpected admin result event", isRetriable: false)
        }
        var count = 0
        guard let results = rd_kafka_CreateTopics_result_topics(result, &count) else { return [:] }
        var outcome: [String: KafkaTopicCreation] = [:]
        for index in 0..<count {
            let topicResult = results[index]
            let name = String(cString: rd_kafka_topic_result_name(topicResult))
            let topicErr = rd_kafka_topic_result_error(topicResult)
            switch topicErr {
            case RD_KAFKA_RESP_ERR_NO_ERROR: outcome[name] = .created
            case RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS: outcome[name] = .alreadyExisted
            default:
                throw KafkaError(
                    code: .admin, topicErr, detail: "topic \(name): " + (rd_kafka_topic_result_error_string(topicResult).map { String(cString: $0) } ?? ""))
            }
        }
        return outcome
    }

    /// Partition count per topic, for the named topics that exist.
    package func partitionCounts(timeout: Duration = .seconds(10)) async throws(KafkaError) -> [String: Int] {
        let milliseconds = timeout.clampedMilliseconds
        let client = self.client
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                var metadata: UnsafePointer<rd_kafka_metadata>?
                let err = rd_kafka_metadata(client.handle, 1, nil, &metadata, milliseconds)
                guard err == RD_KAFKA_RESP_ERR_NO_ERROR, let metadata else {
                    throw KafkaError(code: .admin, err, detail: "metadata")
                }
                defer { rd_kafka_metadata_destroy(metadata) }
                var counts: [String: Int] = [:]
                for index in 0..<Int(metadata.pointee.topic_cnt) {
                    let topic = metadata.pointee.topics[index]
                    if topic.err == RD_KAFKA_RESP_ERR_NO_ERROR {
                        counts[String(cString: topic.topic)] = Int(topic.partition_cnt)
                    }
                }
                return counts
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw .shutDownError
        }
    }

    /// Asks a broker for cluster metadata: succeeds when the cluster answers within the timeout.
    package func checkBroker(timeout: Duration = .seconds(2)) async throws(KafkaError) {
        try await client.checkBroker(timeout: timeout)
    }

    /// Releases the client (blocking work runs off the cooperative pool).
    package func close() async {
        let client = self.client
        _ = try? await NIOThreadPool.singleton.runIfActive { client.destroy() }
    }
}
