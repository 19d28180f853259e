import CRdKafka
import Logging
import Synchronization

/// Receives the events librdkafka delivers on its own background thread (logs, errors and, for
/// producers, delivery reports). Handlers must be quick and must not block.
final class RdKafkaEventSink: Sendable {
    let logger: Logger
    let onDeliveryReport: (@Sendable (OpaquePointer) -> Void)?
    private let fatalError = Mutex<KafkaError?>(nil)

    init(logger: Logger, onDeliveryReport: (@Sendable (OpaquePointer) -> Void)? = nil) {
        self.logger = logger
        self.onDeliveryReport = onDeliveryReport
    }

    /// The fatal error librdkafka raised, if any: the client must then be recreated.
    var fatal: KafkaError? { fatalError.withLock { $0 } }

    /// A librdkafka log line (syslog levels). Connection failures also arrive as error events,
    /// which are logged at warning, so log lines stay one level lower.
    func log(level: Int32, facility: UnsafePointer<CChar>?, message: UnsafePointer<CChar>?) {
        guard let message else { return }
        let text = Logger.Message(stringLiteral: String(cString: message))
        let metadata: Logger.Metadata = ["kafka.facility": .string(facility.map { String(cString: $0) } ?? "")]
        switch level {
        case ...2: logger.error(text, metadata: metadata)
        case 3...4: logger.notice(text, metadata: metadata)
        default: logger.debug(text, metadata: metadata)
        }
    }

    func handle(_ event: OpaquePointer) {
        switch rd_kafka_event_type(event) {
        case RD_KAFKA_EVENT_DR:
            onDeliveryReport?(event)
        case RD_KAFKA_EVENT_ERROR:
            let err = rd_kafka_event_error(event)
            let detail = rd_kafka_event_error_string(event).map { String(cString: $0) }
            if rd_kafka_event_error_is_fatal(event) != 0 {
                let error = KafkaError(code: .fatal, rdKafkaCode: err.rawValue, reason: detail ?? "fatal error", isRetriable: false, isFatal: true)
                fatalError.withLock { $0 = error }
                logger.critical("librdkafka raised a fatal error", metadata: ["error": "\(error)"])
            } else if err == RD_KAFKA_RESP_ERR__TRANSPORT {
                // Repeats on every reconnect attempt; _ALL_BROKERS_DOWN says it once at warning.
                logger.debug("Kafka broker connection failed", metadata: ["error": "\(KafkaError(code: .transport, err, detail: detail))"])
            } else {
                logger.warning("Kafka client error", metadata: ["error": "\(KafkaError(code: .transport, err, detail: detail))"])
            }
        default:
            break
        }
    }
}

/// Owns one `rd_kafka_t`. librdkafka handles are thread-safe, so this wrapper is shareable.
///
/// Events of the main queue go to librdkafka's background thread, which hands them to the
/// `RdKafkaEventSink`: no Swift thread ever blocks waiting for them.
final class RdKafkaClient: @unchecked Sendable {  // the handle is thread-safe; `destroyed` is behind a Mutex
    let handle: OpaquePointer
    let sink: RdKafkaEventSink
    /// Producer tasks currently enqueueing into this instance; it is destroyed only at zero.
    let activeSenders = ActiveSenders()
    private let destroyed = Mutex(false)

    init(type: rd_kafka_type_t, properties: [String: String], events: Int32, sink: RdKafkaEventSink) throws(KafkaError) {
        guard let conf = rd_kafka_conf_new() else {
            throw KafkaError(code: .clientCreation, reason: "rd_kafka_conf_new failed", isRetriable: false)
        }
        var errorText = [CChar](repeating: 0, count: 512)
        for (name, value) in properties.sorted(by: { $0.key < $1.key }) {
            if rd_kafka_conf_set(conf, name, value, &errorText, errorText.count) != RD_KAFKA_CONF_OK {
                rd_kafka_conf_destroy(conf)
                // librdkafka echoes the value in its message; never let a password reach a log.
                let detail = Self.isSecret(name) ? "invalid value (redacted)" : errorBufferText(errorText)
                throw KafkaError(code: .configuration, reason: "property \(name): \(detail)", isRetriable: false)
            }
        }
        rd_kafka_conf_set_events(conf, events | RD_KAFKA_EVENT_ERROR)
        // Log lines come straight from librdkafka's threads into swift-log (thread-safe).
        rd_kafka_conf_set_log_cb(conf) { rk, level, facility, message in
            guard let rk, let opaque = rd_kafka_opaque(rk) else { return }
            Unmanaged<RdKafkaEventSink>.fromOpaque(opaque).takeUnretainedValue().log(level: level, facility: facility, message: message)
        }
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(sink).toOpaque())
        rd_kafka_conf_set_background_event_cb(conf) { _, event, opaque in
            guard let event else { return }
            if let opaque {
                Unmanaged<RdKafkaEventSink>.fromOpaque(opaque).takeUnretainedValue().handle(event)
            }
            rd_kafka_event_destroy(event)
        }
        guard let handle = rd_kafka_new(type, conf, &errorText, errorText.count) else {
            rd_kafka_conf_destroy(conf)
            throw KafkaError(code: .clientCreation, reason: errorBufferText(errorText), isRetriable: false)
        }
        // The background callback serves only the background queue: forward the main queue
        // (delivery reports, errors) to it.
        let mainQueue = rd_kafka_queue_get_main(handle)
        let backgroundQueue = rd_kafka_queue_get_background(handle)
        rd_kafka_queue_forward(mainQueue, backgroundQueue)
        rd_kafka_queue_destroy(mainQueue)
        rd_kafka_queue_destroy(backgroundQueue)
        self.handle = handle
        self.sink = sink
    }

    /// `rd_kafka_destroy` joins librdkafka's threads: call it from a thread that may block.
    func destroy() {
        let first = destroyed.withLock { wasDestroyed in
            defer { wasDestroyed = true }
            return !wasDestroyed
        }
        if first { rd_kafka_destroy(handle) }
    }

    deinit {
        // The sink is referenced unretained by librdkafka: the handle must go first.
        destroy()
    }

    static func isSecret(_ property: String) -> Bool {
        let lowered = property.lowercased()
        return lowered.contains("password") || lowered.contains("secret") || lowered.contains("key")
            || lowered.contains("token") || lowered.contains("jaas")
    }

    /// The runtime librdkafka version string, such as `2.16.0`.
    static var runtimeVersion: String { String(cString: rd_kafka_version_str()) }
}

extension KafkaError {
    static let shutDownError = KafkaError(code: .shutDown, reason: "the Kafka client is shut down", isRetriable: false)
}

/// The NUL-terminated text librdkafka wrote into an error buffer.
func errorBufferText(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
