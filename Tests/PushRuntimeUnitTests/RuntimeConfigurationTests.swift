import Foundation
import Kafka
import PushRuntime
import PushStore
import Testing

@Suite("Kafka client settings from the environment")
struct RuntimeConfigurationTests {
    private static func configuration(_ values: [String: String], defaultLinger: Int = 5) throws -> RuntimeConfiguration {
        try RuntimeConfiguration(
            service: "configuration-tests", defaultOpsPort: 0, defaultLingerMilliseconds: defaultLinger,
            environment: EnvironmentSettings(values)
        )
    }

    @Test("PUSH_RESULTS_RETENTION_DAYS and PUSH_TRACKING_RETENTION_DAYS bound their topics; 0 or unset keeps records; a bad value is refused")
    func topicRetention() throws {
        let configured = try Self.configuration(["PUSH_RESULTS_RETENTION_DAYS": "90", "PUSH_TRACKING_RETENTION_DAYS": "0"])
        #expect(configured.topics.messageResults.retentionMilliseconds == 90 * 24 * 3600 * 1000)
        #expect(configured.topics.tracking.retentionMilliseconds == -1)
        let error = #expect(throws: ConfigurationError.self) { try Self.configuration(["PUSH_TRACKING_RETENTION_DAYS": "-3"]) }
        #expect(error?.message.contains("PUSH_TRACKING_RETENTION_DAYS must be between 0 and 36500") == true, "\(error?.message ?? "")")
    }

    @Test("KAFKA_PROPERTY_* reaches every client, the producer and consumer variants only their own")
    func passThroughProperties() throws {
        let configuration = try Self.configuration([
            "KAFKA_PROPERTY_SECURITY_PROTOCOL": "SASL_SSL",
            "KAFKA_PROPERTY_SASL_MECHANISMS": "PLAIN",
            "KAFKA_PRODUCER_PROPERTY_BATCH_NUM_MESSAGES": "5000",
            "KAFKA_CONSUMER_PROPERTY_FETCH_WAIT_MAX_MS": "100",
            "KAFKA_CONSUMER_PROPERTY_SASL_MECHANISMS": "SCRAM-SHA-512",
            "KAFKA_BROKERS": "kafka-1:9093",
        ])
        #expect(configuration.kafka.properties == ["security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"])
        #expect(configuration.kafka.bootstrapServers == "kafka-1:9093")

        let producer = configuration.producer.client.properties
        #expect(producer == ["security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN", "batch.num.messages": "5000"])

        let consumer = configuration.consumer(group: "g", topics: ["t"]).client.properties
        #expect(
            consumer == ["security.protocol": "SASL_SSL", "sasl.mechanisms": "SCRAM-SHA-512", "fetch.wait.max.ms": "100"],
            "the consumer-only value wins over the one for every client")
    }

    @Test("KAFKA_LINGER_MS sets the producer's linger; the service's own default otherwise")
    func linger() throws {
        #expect(try Self.configuration([:]).producer.lingerMilliseconds == 5)
        #expect(try Self.configuration([:], defaultLinger: 50).producer.lingerMilliseconds == 50)
        #expect(try Self.configuration(["KAFKA_LINGER_MS": "0"], defaultLinger: 50).producer.lingerMilliseconds == 0)
        let error = #expect(throws: ConfigurationError.self) { try Self.configuration(["KAFKA_LINGER_MS": "-1"]) }
        #expect(error.map { "\($0)" }?.contains("KAFKA_LINGER_MS must be between 0 and 900000") == true, "\(String(describing: error))")
    }

    @Test("a variable that is not a property name is refused, naming it, without its value")
    func badPropertyName() throws {
        for key in [
            "KAFKA_PROPERTY_", "KAFKA_PROPERTY_sasl_password", "KAFKA_PROPERTY_SASL.PASSWORD", "KAFKA_PRODUCER_PROPERTY__LINGER",
            "KAFKA_PROPERTY_SASL__MECHANISMS",
        ] {
            let error = #expect(throws: ConfigurationError.self) { try Self.configuration([key: "hunter2-secret"]) }
            let message = error.map { "\($0)" } ?? ""
            #expect(message.contains(key), "\(message)")
            #expect(!message.contains("hunter2"), "\(message)")
        }
    }

    @Test("librdkafka refuses an unknown property when the client is made, naming it and no secret")
    func refusedByLibrdkafka() throws {
        let configuration = try Self.configuration([
            "KAFKA_PROPERTY_SSL_KEY_PASSWORD": "hunter2-secret", "KAFKA_PRODUCER_PROPERTY_SSL_NO_SUCH_SETTING": "1",
        ])
        let error = #expect(throws: KafkaError.self) { try KafkaProducer(configuration: configuration.producer, logger: .init(label: "test")) }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("ssl.no.such.setting"), "\(message)")
        #expect(!message.contains("hunter2"), "\(message)")
    }
}
