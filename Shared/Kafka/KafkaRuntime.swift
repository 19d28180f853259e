import CRdKafka
import Logging
import NIOPosix
import PushWire
import Synchronization

/// Facts about the librdkafka library loaded at run time.
package enum KafkaRuntime {
    /// The loaded librdkafka version, such as `2.16.0`.
    package static var version: String { String(cString: rd_kafka_version_str()) }

    /// librdkafka before 2.1 mis-reads the ApiVersions v3 response of current brokers (Tansu,
    /// KRaft Kafka) and cannot connect: see docs/operations.md.
    package static var isTooOld: Bool { crdkafka_runtime_version() < 0x0201_0000 }

    private static let warned = Atomic<Bool>(false)

    static func warnIfTooOld(logger: Logger) {
        guard isTooOld, !warned.exchange(true, ordering: .relaxed) else { return }
        logger.warning(
            "librdkafka \(version) is loaded; versions before 2.1 cannot talk to current brokers. Put a newer librdkafka.so.1 first on LD_LIBRARY_PATH (scripts/stack env does this).",
            metadata: ["kafka.librdkafka": "\(version)"]
        )
    }
}

extension RdKafkaClient {
    /// A metadata request for no topic: cheap, and answers only when a broker is reachable.
    func checkBroker(timeout: Duration) async throws(KafkaError) {
        let milliseconds = timeout.clampedMilliseconds
        let result: rd_kafka_resp_err_t
        do {
            result = try await NIOThreadPool.singleton.runIfActive { [self] in
                var metadata: UnsafePointer<rd_kafka_metadata>?
                let err = rd_kafka_metadata(self.handle, 0, nil, &metadata, milliseconds)
                if let metadata { rd_kafka_metadata_destroy(metadata) }
                return err
            }
        } catch {
            throw .shutDownError
        }
        if result != RD_KAFKA_RESP_ERR_NO_ERROR { throw KafkaError(code: .transport, result, detail: "metadata request") }
    }
}
