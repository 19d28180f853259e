import CRdKafka
import NIOPosix

/// Topic configuration: read with DescribeConfigs, changed with IncrementalAlterConfigs (the
/// KIP-339 request, which Tansu implements; the older AlterConfigs it does not, and that one
/// would reset every setting not named). `pushctl topics apply-retention` uses both.
extension KafkaAdmin {
    /// The configuration of each named topic, as the broker reports it (Tansu reports only the
    /// values set on the topic; Kafka reports every value with its default). A topic the broker
    /// does not know is absent from the answer.
    package func topicConfigs(_ topics: [String], timeout: Duration = .seconds(10)) async throws(KafkaError) -> [String: [String: String]] {
        guard !topics.isEmpty else { return [:] }
        let milliseconds = timeout.clampedMilliseconds
        let client = self.client
        do {
            return try await NIOThreadPool.singleton.runIfActive {
                try Self.describeBlocking(client: client, topics: topics, timeoutMilliseconds: milliseconds)
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw .shutDownError
        }
    }

    /// Sets the given configuration values of each topic, leaving its other values as they are.
    package func setTopicConfigs(_ changes: [String: [String: String]], timeout: Duration = .seconds(30)) async throws(KafkaError) {
        guard !changes.isEmpty else { return }
        guard crdkafka_has_incremental_alter_configs() != 0 else {
            throw KafkaError(
                code: .admin,
                reason: "the loaded librdkafka (\(KafkaRuntime.version)) has no IncrementalAlterConfigs (2.2 or later needed; docs/kafka-client.md)",
                isRetriable: false)
        }
        let milliseconds = timeout.clampedMilliseconds
        let client = self.client
        do {
            try await NIOThreadPool.singleton.runIfActive {
                try Self.alterBlocking(client: client, changes: changes, timeoutMilliseconds: milliseconds)
            }
        } catch let error as KafkaError {
            throw error
        } catch {
            throw .shutDownError
        }
    }

    private static func describeBlocking(client: RdKafkaClient, topics: [String], timeoutMilliseconds: Int32) throws -> [String: [String: String]] {
        var resources: [OpaquePointer?] = topics.map { rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, $0) }
        defer { resources.forEach { rd_kafka_ConfigResource_destroy($0) } }
        let event = try request(client: client, operation: RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, name: "DescribeConfigs", timeoutMilliseconds: timeoutMilliseconds)
        {
            options, queue in
            resources.withUnsafeMutableBufferPointer { rd_kafka_DescribeConfigs(client.handle, $0.baseAddress, $0.count, options, queue) }
        }
        defer { rd_kafka_event_destroy(event) }
        guard let result = rd_kafka_event_DescribeConfigs_result(event) else {
            throw KafkaError(code: .admin, reason: "unexpected admin result event for DescribeConfigs", isRetriable: false)
        }
        var count = 0
        guard let described = rd_kafka_DescribeConfigs_result_resources(result, &count) else { return [:] }
        var configs: [String: [String: String]] = [:]
        for index in 0..<count {
            let resource = described[index]
            let topic = String(cString: rd_kafka_ConfigResource_name(resource))
            let err = rd_kafka_ConfigResource_error(resource)
            if err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART { continue }
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                throw KafkaError(code: .admin, err, detail: "describe configs of topic \(topic): " + text(rd_kafka_ConfigResource_error_string(resource)))
            }
            var entryCount = 0
            var values: [String: String] = [:]
            if let entries = rd_kafka_ConfigResource_configs(resource, &entryCount) {
                for entryIndex in 0..<entryCount {
                    let entry = entries[entryIndex]
                    guard let value = rd_kafka_ConfigEntry_value(entry) else { continue }
                    values[String(cString: rd_kafka_ConfigEntry_name(entry))] = String(cString: value)
                }
            }
            configs[topic] = values
        }
        return configs
    }

    private static func alterBlocking(client: RdKafkaClient, changes: [String: [String: String]], timeoutMilliseconds: Int32) throws {
        var resources: [OpaquePointer?] = []
        defer { resources.forEach { rd_kafka_ConfigResource_destroy($0) } }
        for (topic, values) in changes.sorted(by: { $0.key < $1.key }) {
            let resource = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, topic)
            resources.append(resource)
            for (name, value) in values.sorted(by: { $0.key < $1.key }) {
                if let error = crdkafka_add_incremental_set(resource, name, value) {
                    defer { rd_kafka_error_destroy(error) }
                    throw KafkaError(code: .admin, reason: "topic \(topic) config \(name): " + text(rd_kafka_error_string(error)), isRetriable: false)
                }
            }
        }
        // ANY: Debian's 2.0.2 headers do not name the IncrementalAlterConfigs operation.
        let event = try request(client: client, operation: RD_KAFKA_ADMIN_OP_ANY, name: "IncrementalAlterConfigs", timeoutMilliseconds: timeoutMilliseconds) {
            options, queue in
            resources.withUnsafeMutableBufferPointer { crdkafka_incremental_alter_configs(client.handle, $0.baseAddress, $0.count, options, queue) }
        }
        defer { rd_kafka_event_destroy(event) }
        var count = 0
        guard let altered = crdkafka_incremental_alter_configs_result(event, &count) else {
            throw KafkaError(code: .admin, reason: "unexpected admin result event for IncrementalAlterConfigs", isRetriable: false)
        }
        for index in 0..<count {
            let resource = altered[index]
            let err = rd_kafka_ConfigResource_error(resource)
            guard err == RD_KAFKA_RESP_ERR_NO_ERROR else {
                let topic = String(cString: rd_kafka_ConfigResource_name(resource))
                throw KafkaError(code: .admin, err, detail: "alter configs of topic \(topic): " + text(rd_kafka_ConfigResource_error_string(resource)))
            }
        }
    }

    /// Sends one admin request (`send` gets the options and the reply queue) and waits for its
    /// result event, which the caller destroys.
    private static func request(
        client: RdKafkaClient, operation: rd_kafka_admin_op_t, name: String, timeoutMilliseconds: Int32,
        send: (OpaquePointer?, OpaquePointer?) -> Void
    ) throws -> OpaquePointer {
        var errorText = [CChar](repeating: 0, count: 512)
        let queue = rd_kafka_queue_new(client.handle)
        defer { rd_kafka_queue_destroy(queue) }
        let options = rd_kafka_AdminOptions_new(client.handle, operation)
        defer { rd_kafka_AdminOptions_destroy(options) }
        _ = rd_kafka_AdminOptions_set_request_timeout(options, timeoutMilliseconds, &errorText, errorText.count)
        send(options, queue)
        guard let event = rd_kafka_queue_poll(queue, timeoutMilliseconds + 1000) else {
            throw KafkaError(code: .admin, rdKafkaCode: RD_KAFKA_RESP_ERR__TIMED_OUT.rawValue, reason: "\(name) timed out", isRetriable: true)
        }
        let err = rd_kafka_event_error(event)
        if err != RD_KAFKA_RESP_ERR_NO_ERROR {
            let detail = "\(name): " + text(rd_kafka_event_error_string(event))
            rd_kafka_event_destroy(event)
            throw KafkaError(code: .admin, err, detail: detail)
        }
        return event
    }

    private static func text(_ pointer: UnsafePointer<CChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }
}
