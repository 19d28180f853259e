import CRdKafka

/// An error from the Kafka client: a stable `code` for programs and metrics, the broker's or
/// librdkafka's own error name, and whether retrying can help.
///
/// `description` never contains record keys or payloads, so it is safe to log and to return to
/// an HTTP caller.
package struct KafkaError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What kind of failure this is. An open set: new codes may be added.
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        /// A short label, safe as a metric dimension.
        package let label: String
        private init(_ label: String) { self.label = label }
        package var description: String { label }

        /// A configuration property was rejected by librdkafka.
        package static let configuration = Code("configuration")
        /// The client could not be created.
        package static let clientCreation = Code("client_creation")
        /// The broker did not acknowledge the record before `message.timeout.ms`.
        package static let deliveryTimedOut = Code("delivery_timed_out")
        /// The broker rejected or failed to store a record.
        package static let deliveryFailed = Code("delivery_failed")
        /// The local send queue stayed full for longer than the send timeout.
        package static let queueFull = Code("queue_full")
        /// No broker could be reached.
        package static let transport = Code("transport")
        /// An administrative request (topic creation, metadata) failed.
        package static let admin = Code("admin")
        /// A consumer-group operation (subscribe, assign, commit, store) failed.
        package static let consumer = Code("consumer")
        /// The client was shut down.
        package static let shutDown = Code("shut_down")
        /// The sending task was cancelled before the record was enqueued, or while it awaited
        /// the broker (it may then still be stored).
        package static let cancelled = Code("cancelled")
        /// librdkafka raised a fatal error: this client instance can no longer be used.
        package static let fatal = Code("fatal")
    }

    package let code: Code
    /// librdkafka's error code (`rd_kafka_resp_err_t`), or 0 when the error is the wrapper's own.
    package let rdKafkaCode: Int32
    /// librdkafka's or the broker's error name, such as `_MSG_TIMED_OUT` or `TOPIC_AUTHORIZATION_FAILED`.
    package let reason: String
    /// Retrying the same operation later may succeed (broker down, timeout, leader change).
    package let isRetriable: Bool
    /// The client instance is unusable and must be recreated (for example a fenced idempotent producer).
    package let isFatal: Bool

    package init(code: Code, rdKafkaCode: Int32 = 0, reason: String, isRetriable: Bool, isFatal: Bool = false) {
        self.code = code
        self.rdKafkaCode = rdKafkaCode
        self.reason = reason
        self.isRetriable = isRetriable
        self.isFatal = isFatal
    }

    /// Classifies a librdkafka response code.
    package init(code: Code, _ err: rd_kafka_resp_err_t, detail: String? = nil) {
        let name = String(cString: rd_kafka_err2name(err))
        let text = String(cString: rd_kafka_err2str(err))
        let classified: Code
        switch err {
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
            classified = code == .deliveryFailed ? .deliveryTimedOut : code
        case RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__RESOLVE:
            classified = code == .deliveryFailed ? .transport : code
        case RD_KAFKA_RESP_ERR__FATAL:
            classified = .fatal
        default:
            classified = code
        }
        self.init(
            code: classified,
            rdKafkaCode: err.rawValue,
            reason: detail.map { "\(name): \(text) (\($0))" } ?? "\(name): \(text)",
            isRetriable: Self.retriable(err),
            isFatal: err == RD_KAFKA_RESP_ERR__FATAL
        )
    }

    /// Errors that go away by themselves: timeouts, broker unavailability, leadership moves, throttling.
    static func retriable(_ err: rd_kafka_resp_err_t) -> Bool {
        switch err {
        case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT, RD_KAFKA_RESP_ERR__TIMED_OUT_QUEUE,
            RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN, RD_KAFKA_RESP_ERR__RESOLVE,
            RD_KAFKA_RESP_ERR__QUEUE_FULL, RD_KAFKA_RESP_ERR__WAIT_COORD, RD_KAFKA_RESP_ERR__PREV_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT, RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION,
            RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS,
            RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND, RD_KAFKA_RESP_ERR_NETWORK_EXCEPTION,
            RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE, RD_KAFKA_RESP_ERR_NOT_COORDINATOR,
            RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART, RD_KAFKA_RESP_ERR_THROTTLING_QUOTA_EXCEEDED,
            RD_KAFKA_RESP_ERR_KAFKA_STORAGE_ERROR:
            return true
        default:
            return false
        }
    }

    package var description: String {
        "KafkaError(\(code.label)\(isRetriable ? ", retriable" : "")\(isFatal ? ", fatal" : ""): \(reason))"
    }
}
