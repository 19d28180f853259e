import Foundation
import Kafka
import Testing

@Suite("Kafka producer and consumer against the real broker", .serialized)
struct KafkaRoundTripTests {
    @Test("records keep their key, value, headers and per-key order")
    func roundTrip() async throws {
        let topic = KafkaTestSupport.uniqueName("roundtrip")
        try await KafkaTestSupport.createTopic(topic, partitions: 3)
        let producer = try KafkaTestSupport.producer()
        let records = (0..<300).map { index in
            KafkaProducerRecord(
                topic: topic, key: "device-\(index % 7)", value: Array("payload-\(index)".utf8),
                headers: [KafkaHeader(name: "ce_type", string: "Test"), KafkaHeader(name: "index", string: "\(index)")]
            )
        }
        let reports = await producer.send(records)
        let stored = try reports.map { try $0.get() }
        #expect(Set(stored.map(\.partition)).count > 1, "keys spread over the partitions")
        await producer.close()

        let consumer = try KafkaTestSupport.consumer(group: KafkaTestSupport.uniqueName("g"), topics: [topic])
        let received = try await withDeadline(.seconds(60)) {
            var received: [KafkaConsumerRecord] = []
            for try await batch in consumer.batches {
                received += batch
                try consumer.storeOffsets(for: batch)
                if received.count >= records.count { break }
            }
            return received
        }
        await consumer.close()

        #expect(received.count == records.count)
        for record in received {
            let index = try #require(record.headers.string("index").flatMap(Int.init))
            #expect(record.keyString == "device-\(index % 7)")
            #expect(String(decoding: record.value, as: UTF8.self) == "payload-\(index)")
            #expect(record.headers.string("ce_type") == "Test")
            #expect(record.timestampMilliseconds != nil)
        }
        // Per key, records arrive in the order they were sent.
        let byKey = Dictionary(grouping: received, by: { $0.keyString ?? "" })
        for (_, keyed) in byKey {
            let indices = keyed.compactMap { $0.headers.string("index").flatMap(Int.init) }
            #expect(indices == indices.sorted())
        }
    }

    @Test("a record for a topic that does not exist fails with an error instead of hanging")
    func unknownTopicFails() async throws {
        let producer = try KafkaTestSupport.producer(deliveryTimeoutMilliseconds: 3_000)
        let error = try await withDeadline(.seconds(20)) {
            await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaProducerRecord(topic: KafkaTestSupport.uniqueName("missing"), key: "k", value: [1]))
            }
        }
        #expect(error != nil)
        await producer.close()
    }

    @Test("broker unavailable: an awaited send fails with a retriable error within its timeout")
    func brokerUnavailable() async throws {
        // Port 1 on loopback: nothing listens, every connection is refused.
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1"),
                deliveryTimeoutMilliseconds: 2_000
            ),
            logger: KafkaTestSupport.logger
        )
        let clock = ContinuousClock()
        let started = clock.now
        let error = try await withDeadline(.seconds(15)) {
            await #expect(throws: KafkaError.self) {
                try await producer.send(KafkaProducerRecord(topic: "push.subscriptions", key: "k", value: [1]))
            }
        }
        let kafkaError = try #require(error as? KafkaError)
        #expect(kafkaError.isRetriable)
        #expect(!kafkaError.isFatal)
        #expect(kafkaError.code == .deliveryTimedOut)
        #expect(clock.now - started < .seconds(10))
        await producer.close()
    }

    @Test("creating topics twice is harmless and reports what existed")
    func idempotentTopicCreation() async throws {
        let topic = KafkaTestSupport.uniqueName("admin")
        let admin = try KafkaAdmin(configuration: try KafkaTestSupport.client(), logger: KafkaTestSupport.logger)
        let spec = KafkaTopicSpecification(name: topic, partitions: 5, config: ["retention.ms": "-1"])
        #expect(try await admin.createTopics([spec]) == [topic: .created])
        #expect(try await admin.createTopics([spec]) == [topic: .alreadyExisted])
        #expect(try await admin.partitionCounts()[topic] == 5)
        await admin.close()
    }
}
