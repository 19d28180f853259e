import Foundation
import Kafka
import Testing

@Suite("Kafka producer close and cancellation", .serialized)
struct KafkaProducerLifecycleTests {
    /// CPU seconds (user + system) this process used so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    @Test("close() while a send waits for room in a full queue: the send returns, every record has a result")
    func closeDuringSend() async throws {
        let topic = KafkaTestSupport.uniqueName("close-race")
        try await KafkaTestSupport.createTopic(topic, partitions: 3)
        for _ in 0..<3 {
            let producer = try KafkaProducer(
                configuration: KafkaProducerConfiguration(
                    client: KafkaClientConfiguration(bootstrapServers: try KafkaTestSupport.brokers, properties: ["queue.buffering.max.messages": "1000"]),
                    deliveryTimeoutMilliseconds: 10_000
                ),
                logger: KafkaTestSupport.logger
            )
            let records = (0..<200_000).map { KafkaProducerRecord(topic: topic, key: "k\($0 % 100)", value: Array(repeating: 65, count: 100)) }
            let results = try await withDeadline(.seconds(30)) {
                async let sent = producer.send(records)
                try await Task.sleep(for: .milliseconds(300))
                await producer.close()
                return await sent
            }
            #expect(results.count == records.count)
            let failures = results.compactMap { if case .failure(let error) = $0 { error } else { nil } }
            #expect(!failures.isEmpty, "records still waiting at close fail instead of hanging")
            #expect(failures.allSatisfy { $0.code == .shutDown || $0.code == .deliveryFailed }, "\(Set(failures.map(\.code.label)))")
            #expect(results.count - failures.count > 0, "records enqueued before close were delivered")
        }
    }

    @Test("a cancelled send stops waiting for room at once instead of spinning until the delivery timeout")
    func cancelledSendDoesNotSpin() async throws {
        let producer = try KafkaProducer(
            configuration: KafkaProducerConfiguration(
                client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1", properties: ["queue.buffering.max.messages": "100"]),
                deliveryTimeoutMilliseconds: 4_000
            ),
            logger: KafkaTestSupport.logger
        )
        let records = (0..<1_000).map { KafkaProducerRecord(topic: "push.subscriptions", key: "k", value: [UInt8]($0.description.utf8)) }
        let sending = Task { await producer.send(records) }
        try await Task.sleep(for: .milliseconds(200))
        sending.cancel()
        let before = Self.cpuSeconds()
        try await Task.sleep(for: .seconds(1.5))
        let used = Self.cpuSeconds() - before
        let results = await sending.value
        #expect(used < 0.5, "CPU while the cancelled send waits for its enqueued records: \(used) s in 1.5 s")
        let cancelled = results.filter { if case .failure(let error) = $0 { error.code.label == "cancelled" } else { false } }.count
        #expect(cancelled >= 800, "records not yet enqueued fail as cancelled: \(cancelled)")
        #expect(results.count == records.count)
        await producer.close()
    }

    @Test("close() with the broker unreachable waits for undelivered records only for its close flush timeout, and fails them")
    func closeFlushIsBounded() async throws {
        var configuration = KafkaProducerConfiguration(
            client: KafkaClientConfiguration(bootstrapServers: "127.0.0.1:1"),
            deliveryTimeoutMilliseconds: 20_000
        )
        configuration.closeFlushTimeoutMilliseconds = 1_000
        let producer = try KafkaProducer(configuration: configuration, logger: KafkaTestSupport.logger)
        let records = (0..<100).map { KafkaProducerRecord(topic: "push.subscriptions", key: "k", value: [UInt8]($0.description.utf8)) }
        let clock = ContinuousClock()
        let (results, closing) = try await withDeadline(.seconds(15)) {
            async let sent = producer.send(records)
            try await Task.sleep(for: .milliseconds(200))
            let started = clock.now
            await producer.close()
            return (await sent, clock.now - started)
        }
        #expect(closing < .seconds(3), "close took \(closing), not the 20 s delivery timeout")
        #expect(results.count == records.count)
        #expect(results.allSatisfy { if case .failure = $0 { true } else { false } }, "no record the broker never stored is reported stored")
    }
}
