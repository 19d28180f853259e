import Kafka
import PushRuntime
import Testing

@testable import PushSending

/// The settings that bound a sender's memory (docs/senders.md, "Memory") reach the consumers'
/// librdkafka properties: what librdkafka pre-fetches is set here, not left to its 64 MiB default.
@Suite("Sender memory settings")
struct SenderMemorySettingsTests {
    static let base = KafkaConsumerConfiguration(client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:9092"), groupID: "", topics: [])

    static func settings(_ values: [String: String], defaults: SenderSettings = APNSSenderApplication.defaults) throws -> SenderSettings {
        try SenderSettings(prefix: "APNS_SENDER", defaults: defaults, environment: EnvironmentSettings(values))
    }

    @Test("by default each lane's consumer pre-fetches at most 2,048 KiB and 2,048 records, in its own group on its two topics")
    func defaults() throws {
        for defaults in [APNSSenderApplication.defaults, FCMSenderApplication.defaults] {
            let settings = try Self.settings([:], defaults: defaults)
            #expect(settings.fetchQueueKilobytes == 2_048)
            #expect(settings.maxHeld == defaults.maxHeld)
            for lane in [settings, settings.transactionalLane] {
                let consumer = lane.consumer(Self.base, topics: ["m", "r"])
                let properties = consumer.rdKafkaProperties
                #expect(properties["queued.max.messages.kbytes"] == "2048")
                #expect(properties["queued.min.messages"] == "2048")
                #expect(properties["group.id"] == lane.group)
                #expect(consumer.topics == ["m", "r"])
                #expect(consumer.maxPollIntervalMilliseconds >= lane.retryMaxMilliseconds + 300_000)
            }
        }
        // The held records' defaults: every record a lane may hold is bounded.
        #expect(APNSSenderApplication.defaults.maxHeld == 5_000)
        #expect(FCMSenderApplication.defaults.maxHeld == 5_000)
    }

    @Test("<PREFIX>_FETCH_QUEUE_KB sets the queue's bytes and, at least 1,000, its records; a KAFKA_CONSUMER_PROPERTY_ wins")
    func setting() throws {
        let small = try Self.settings(["APNS_SENDER_FETCH_QUEUE_KB": "512"]).consumer(Self.base, topics: ["m", "r"]).rdKafkaProperties
        #expect(small["queued.max.messages.kbytes"] == "512")
        #expect(small["queued.min.messages"] == "1000")
        let large = try Self.settings(["APNS_SENDER_FETCH_QUEUE_KB": "16384"]).consumer(Self.base, topics: ["m", "r"]).rdKafkaProperties
        #expect(large["queued.max.messages.kbytes"] == "16384")
        #expect(large["queued.min.messages"] == "16384")

        let environment = EnvironmentSettings(["KAFKA_CONSUMER_PROPERTY_QUEUED_MAX_MESSAGES_KBYTES": "65536"])
        let runtime = try RuntimeConfiguration(service: "test", defaultOpsPort: 0, environment: environment)
        let overridden = try Self.settings([:]).consumer(runtime.consumer(group: "g"), topics: ["m", "r"]).rdKafkaProperties
        #expect(overridden["queued.max.messages.kbytes"] == "65536")
    }

    @Test("a fetch queue outside 64 … 2,097,151 KiB or not a number stops the sender naming the variable")
    func invalid() {
        for value in ["63", "2097152", "lots", "-1"] {
            #expect {
                _ = try Self.settings(["APNS_SENDER_FETCH_QUEUE_KB": value])
            } throws: { error in
                "\(error)".contains("APNS_SENDER_FETCH_QUEUE_KB")
            }
        }
    }
}
