import Foundation
import Kafka
import MetricsTestKit
import Synchronization
import Testing

@Suite("Kafka consumer groups against the real broker", .serialized)
struct KafkaConsumerGroupTests {
    /// Reads until `stop` says so, storing offsets after each batch; returns what it read.
    private static func drain(_ consumer: KafkaConsumer, into seen: Locked<[String: [String]]>, member: String, until stop: @escaping @Sendable () -> Bool)
        async throws
    {
        for try await batch in consumer.batches {
            seen.withLock { $0[member, default: []] += batch.map { String(decoding: $0.value, as: UTF8.self) } }
            try consumer.storeOffsets(for: batch)
            if stop() { break }
        }
    }

    @Test("two members split the partitions; when one leaves the other takes over and nothing is lost")
    func splitAndTakeOver() async throws {
        let topic = KafkaTestSupport.uniqueName("group")
        let group = KafkaTestSupport.uniqueName("members")
        try await KafkaTestSupport.createTopic(topic, partitions: 4)
        let producer = try KafkaTestSupport.producer()

        let first = try KafkaTestSupport.consumer(group: group, topics: [topic])
        let second = try KafkaTestSupport.consumer(group: group, topics: [topic])
        let seen = Locked<[String: [String]]>([:])
        let total = 2_000

        try await withDeadline(.seconds(90)) {
            // The second member reads until its task is cancelled, then leaves the group.
            let secondMember = Task {
                try await Self.drain(second, into: seen, member: "second") { false }
                await second.close()
            }
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask {
                    try await Self.drain(first, into: seen, member: "first") {
                        seen.withLock { $0.values.reduce(0) { $0 + $1.count } } >= total
                    }
                }
                // Wait until both members own partitions, then produce the first half.
                while first.assignment.isEmpty || second.assignment.isEmpty {
                    try await Task.sleep(for: .milliseconds(100))
                }
                #expect(first.assignment.count + second.assignment.count == 4)
                #expect(first.assignment.isDisjoint(with: second.assignment))
                _ = try await producer.send((0..<total / 2).map { KafkaProducerRecord(topic: topic, key: "k\($0)", value: Array("r\($0)".utf8)) }).map {
                    try $0.get()
                }

                // Both read their share; then the second member leaves the group.
                while seen.withLock({ ($0["second"]?.count ?? 0) == 0 || ($0["first"]?.count ?? 0) == 0 }) {
                    try await Task.sleep(for: .milliseconds(50))
                }
                secondMember.cancel()
                try await secondMember.value
                while first.assignment.count < 4 {
                    try await Task.sleep(for: .milliseconds(100))
                }
                _ = try await producer.send((total / 2..<total).map { KafkaProducerRecord(topic: topic, key: "k\($0)", value: Array("r\($0)".utf8)) }).map {
                    try $0.get()
                }
                try await tasks.waitForAll()
            }
        }
        await first.close()
        await producer.close()

        let all = seen.withLock { $0.values.flatMap { $0 } }
        let missing = Set((0..<total).map { "r\($0)" }).subtracting(all)
        #expect(missing.isEmpty, "every record was read; missing: \(missing.sorted().prefix(10))")
        #expect(all.count == total, "stored offsets were handed over: nothing was read twice")
    }

    /// A service stopping (SIGTERM) closes its consumers while the other instances, stopped with
    /// it, close theirs: each close starts a rebalance that the others' closes run into.
    @Test(
        "members closed while their group rebalances each leave within a few seconds, far below the session timeout",
        arguments: [50, 400, 1_500])
    func closeDuringRebalance(after delay: Int) async throws {
        let topic = KafkaTestSupport.uniqueName("close")
        let group = KafkaTestSupport.uniqueName("closing")
        try await KafkaTestSupport.createTopic(topic, partitions: 8)
        let session = 20_000
        let members = try (0..<4).map { _ in
            var configuration = KafkaConsumerConfiguration(
                client: try KafkaTestSupport.client(), groupID: group, topics: [topic], sessionTimeoutMilliseconds: session,
                heartbeatIntervalMilliseconds: 1_000, maxPollIntervalMilliseconds: 30_000, maxBatchSize: 200)
            configuration.leaveTimeoutMilliseconds = 1_000
            return try KafkaConsumer(configuration: configuration, logger: KafkaTestSupport.logger)
        }
        let readers = members.map { member in Task { for try await _ in member.batches {} } }
        try await withDeadline(.seconds(60)) {
            while members.contains(where: { $0.assignment.isEmpty }) { try await Task.sleep(for: .milliseconds(100)) }
        }
        // As a stopping service does: reading stops first, then the consumers close.
        for reader in readers { reader.cancel() }
        for reader in readers { _ = await reader.result }
        let clock = ContinuousClock()
        let started = clock.now
        let closes = Locked<[Duration]>([])
        await withTaskGroup(of: Void.self) { closing in
            for (index, member) in members.enumerated() {
                closing.addTask {
                    // The first leaves; the others close while the group rebalances for it.
                    if index > 0 { try? await Task.sleep(for: .milliseconds(delay * index)) }
                    let begun = clock.now
                    await member.close()
                    closes.withLock { $0.append(clock.now - begun) }
                }
            }
        }
        let total = clock.now - started
        let each = closes.withLock { $0 }
        // Leaving is bounded at 1 s here; without the bound a close that runs into the
        // rebalance waits for the coordinator (5 s on Tansu, up to the rebalance timeout on Kafka).
        #expect(each.allSatisfy { $0 < .seconds(2) }, "each close: \(each)")
        #expect(total < .seconds(3) + .milliseconds(3 * delay), "all closed in \(total) (session timeout \(session) ms)")
    }

    @Test("pause stops delivery from a partition until resume")
    func pauseAndResume() async throws {
        let topic = KafkaTestSupport.uniqueName("pause")
        try await KafkaTestSupport.createTopic(topic, partitions: 1)
        let producer = try KafkaTestSupport.producer()
        let consumer = try KafkaTestSupport.consumer(group: KafkaTestSupport.uniqueName("p"), topics: [topic])
        try await producer.send(KafkaProducerRecord(topic: topic, key: "a", value: Array("1".utf8)))

        var iterator = consumer.records.makeAsyncIterator()
        let firstRecord = try await withDeadline(.seconds(30)) { [consumer] in
            var iterator = consumer.records.makeAsyncIterator()
            return try #require(try await iterator.next())
        }
        _ = iterator
        #expect(String(decoding: firstRecord.value, as: UTF8.self) == "1")
        try consumer.storeOffsets(for: [firstRecord])
        try consumer.pause([firstRecord.topicPartition])
        try await producer.send(KafkaProducerRecord(topic: topic, key: "a", value: Array("2".utf8)))

        let whilePaused = try await withDeadline(.seconds(10)) { [consumer] in
            try await withThrowingTaskGroup(of: KafkaConsumerRecord?.self) { group in
                group.addTask {
                    var iterator = consumer.records.makeAsyncIterator()
                    return try await iterator.next()
                }
                try await Task.sleep(for: .seconds(2))
                group.cancelAll()
                return try await group.next() ?? nil
            }
        }
        #expect(whilePaused == nil, "nothing is delivered from a paused partition")

        try consumer.resume([firstRecord.topicPartition])
        let afterResume = try await withDeadline(.seconds(30)) { [consumer] in
            var iterator = consumer.records.makeAsyncIterator()
            return try #require(try await iterator.next())
        }
        #expect(String(decoding: afterResume.value, as: UTF8.self) == "2")
        await consumer.close()
        await producer.close()
    }

    @Test(
        "a start-position provider decides where an assigned partition is read from; the group's committed offset follows it, with nothing processed"
    )
    func startPositions() async throws {
        let topic = KafkaTestSupport.uniqueName("start")
        try await KafkaTestSupport.createTopic(topic, partitions: 1)
        let producer = try KafkaTestSupport.producer()
        try await KafkaConsumerLagTests.produce(10, to: topic, from: producer)
        await producer.close()

        let asked = Locked<[KafkaTopicPartition]>([])
        let group = KafkaTestSupport.uniqueName("s")
        let consumer = try KafkaTestSupport.consumer(group: group, topics: [topic]) { partitions in
            asked.withLock { $0 += partitions }
            return Dictionary(uniqueKeysWithValues: partitions.map { ($0, Int64(7)) })
        }
        let first = try await withDeadline(.seconds(30)) { [consumer] in
            var iterator = consumer.records.makeAsyncIterator()
            return try #require(try await iterator.next())
        }
        #expect(first.offset == 7)
        #expect(String(decoding: first.value, as: UTF8.self) == "r7")
        #expect(asked.withLock { $0 } == [KafkaTopicPartition(topic: topic, partition: 0)])
        // The record read is not stored (not processed); the close commits the start position:
        // read from outside, the group owes the 3 records from offset 7, not all 10.
        await consumer.close()
        let lag = try KafkaGroupLag(
            client: try KafkaTestSupport.client(), groups: [.init(name: group, topics: [topic])], metricsFactory: TestMetrics(),
            logger: KafkaTestSupport.logger)
        #expect(try await lag.refresh()[group] == [topic: 3])
    }
}

/// A lock-protected value that closures can share.
final class Locked<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
}
