import Foundation
import Kafka
import MetricsTestKit
import Testing

@Suite("push_consumer_lag against the real broker", .serialized)
struct KafkaConsumerLagTests {
    /// A consumer of `topic` whose metrics go to `metrics`, refreshing its lag every 200 ms.
    static func consumer(topic: String, metrics: TestMetrics) throws -> KafkaConsumer {
        var configuration = KafkaConsumerConfiguration(
            client: try KafkaTestSupport.client(), groupID: KafkaTestSupport.uniqueName("lag"), topics: [topic],
            sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000, maxPollIntervalMilliseconds: 60_000, maxBatchSize: 200
        )
        configuration.lagRefreshIntervalMilliseconds = 200
        return try KafkaConsumer(configuration: configuration, metricsFactory: metrics, logger: KafkaTestSupport.logger)
    }

    /// Produces `count` records one at a time, each its own record batch: Tansu 0.6 answers a
    /// ListOffsets for the latest offset with the last batch's base offset + 1 (so a high
    /// watermark "a few records short": docs/operations.md), exact only when batches hold one
    /// record. Apache Kafka needs no such care.
    static func produce(_ count: Int, to topic: String, from producer: KafkaProducer) async throws {
        for index in 0..<count {
            _ = try await producer.send(KafkaProducerRecord(topic: topic, key: "k\(index)", value: Array("r\(index)".utf8)))
        }
    }

    /// The gauge's value once it equals `expected`, or the last value seen after 20 s.
    static func lag(_ metrics: TestMetrics, topic: String, group: String, reaching expected: Int64) async throws -> Int64? {
        let deadline = ContinuousClock.now + .seconds(20)
        var last: Int64?
        while ContinuousClock.now < deadline {
            if let gauge = try? metrics.expectGauge("push_consumer_lag", [("group", group), ("topic", topic), ("partition", "0")]),
                let value = gauge.lastValue
            {
                last = Int64(value)
                if last == expected { return last }
            }
            try await Task.sleep(for: .milliseconds(100))
        }
        return last
    }

    static func expectLag(
        _ metrics: TestMetrics, topic: String, group: String, _ expected: Int64, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let value = try await lag(metrics, topic: topic, group: group, reaching: expected)
        #expect(value == expected, "push_consumer_lag of \(topic)", sourceLocation: sourceLocation)
    }

    @Test("a consumer that stops reading shows its lag growing as records are produced, and not after it closed")
    func stalledReaderLagGrows() async throws {
        let topic = KafkaTestSupport.uniqueName("lag")
        try await KafkaTestSupport.createTopic(topic, partitions: 1)
        let producer = try KafkaTestSupport.producer()
        let metrics = TestMetrics()
        let consumer = try Self.consumer(topic: topic, metrics: metrics)
        let group = consumer.configuration.groupID

        try await withDeadline(.seconds(90)) {
            try await Self.produce(10, to: topic, from: producer)
            var read = 0
            for try await batch in consumer.batches {
                read += batch.count
                try consumer.storeOffsets(for: batch)
                if read == 10 { break }
            }
            try await Self.expectLag(metrics, topic: topic, group: group, 0)

            // Nobody reads any more (a stuck application): the gauge follows the broker anyway.
            try await Self.produce(25, to: topic, from: producer)
            try await Self.expectLag(metrics, topic: topic, group: group, 25)
            try await Self.produce(15, to: topic, from: producer)
            try await Self.expectLag(metrics, topic: topic, group: group, 40)

            // Reading again brings it back to 0.
            read = 0
            for try await batch in consumer.batches {
                read += batch.count
                if read == 40 { break }
            }
            try await Self.expectLag(metrics, topic: topic, group: group, 0)

            // Closed, the member reports nothing for a partition it no longer reads.
            await consumer.close()
            #expect(throws: (any Error).self) {
                try metrics.expectGauge("push_consumer_lag", [("group", group), ("topic", topic), ("partition", "0")])
            }
        }
        await producer.close()
    }

    @Test("a paused partition's lag grows while the consumer goes on reading the others")
    func pausedPartitionLagGrows() async throws {
        let topic = KafkaTestSupport.uniqueName("lagpause")
        let other = KafkaTestSupport.uniqueName("lagother")
        try await KafkaTestSupport.createTopic(topic, partitions: 1)
        try await KafkaTestSupport.createTopic(other, partitions: 1)
        let producer = try KafkaTestSupport.producer()
        let metrics = TestMetrics()
        var configuration = KafkaConsumerConfiguration(
            client: try KafkaTestSupport.client(), groupID: KafkaTestSupport.uniqueName("lag"), topics: [topic, other],
            sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000, maxPollIntervalMilliseconds: 60_000, maxBatchSize: 200
        )
        configuration.lagRefreshIntervalMilliseconds = 200
        let consumer = try KafkaConsumer(configuration: configuration, metricsFactory: metrics, logger: KafkaTestSupport.logger)
        let group = configuration.groupID

        try await withDeadline(.seconds(90)) {
            try await Self.produce(5, to: topic, from: producer)
            var read = 0
            for try await batch in consumer.batches {
                read += batch.count
                if read == 5 { break }
            }
            try consumer.pause([KafkaTopicPartition(topic: topic, partition: 0)])
            try await Self.produce(30, to: topic, from: producer)
            try await Self.produce(7, to: other, from: producer)
            // The consumer keeps reading the other topic; the paused partition's lag is 30.
            read = 0
            for try await batch in consumer.batches {
                #expect(batch.allSatisfy { $0.topic == other })
                read += batch.count
                if read == 7 { break }
            }
            try await Self.expectLag(metrics, topic: topic, group: group, 30)
            try await Self.expectLag(metrics, topic: other, group: group, 0)
        }
        await consumer.close()
        await producer.close()
    }
}
