import Foundation
import Kafka
import MetricsTestKit
import Testing

/// `KafkaGroupLag`: a group's lag from its committed offsets, read from outside the group, so
/// it shows while the group has no member at all.
@Suite("push_consumer_group_lag against the real broker", .serialized)
struct KafkaGroupLagTests {
    @Test(
        "a group whose only member left shows the records after its committed offsets, growing as records arrive; a group that never committed owes every record; a topic the broker lacks is left out"
    )
    func membersGone() async throws {
        let topic = KafkaTestSupport.uniqueName("group-lag")
        try await KafkaTestSupport.createTopic(topic, partitions: 2)
        let producer = try KafkaTestSupport.producer()
        // One record per request: Tansu answers the latest offset with the last batch's base
        // offset + 1 (KafkaConsumerLagTests.produce).
        try await KafkaConsumerLagTests.produce(10, to: topic, from: producer)

        // A member reads 4 records, commits, and leaves: the group has no member any more.
        let group = KafkaTestSupport.uniqueName("gone")
        let member = try KafkaTestSupport.consumer(group: group, topics: [topic])
        let read = try await withDeadline(.seconds(60)) { [member] in
            var records: [KafkaConsumerRecord] = []
            for try await record in member.records {
                records.append(record)
                if records.count == 4 { break }
            }
            return records
        }
        try member.storeOffsets(for: read)
        await member.close()

        let never = KafkaTestSupport.uniqueName("never")
        let metrics = TestMetrics()
        let monitor = try KafkaGroupLag(
            client: try KafkaTestSupport.client(),
            groups: [
                .init(name: group, topics: [topic]), .init(name: never, topics: [topic]),
                .init(name: group, topics: [KafkaTestSupport.uniqueName("missing")]),
            ],
            metricsFactory: metrics, logger: KafkaTestSupport.logger)
        let first = try await monitor.refresh()
        #expect(first[group] == [topic: 6], "10 records, 4 committed: \(first)")
        #expect(first[never] == [topic: 10], "never committed: every record is owed")
        #expect(try metrics.expectGauge("push_consumer_group_lag", [("group", group), ("topic", topic)]).lastValue == 6)

        try await KafkaConsumerLagTests.produce(5, to: topic, from: producer)
        let second = try await monitor.refresh()
        #expect(second[group] == [topic: 11], "grows while nobody reads: \(second)")
        #expect(try metrics.expectGauge("push_consumer_group_lag", [("group", group), ("topic", topic)]).lastValue == 11)
        await producer.close()
    }
}
