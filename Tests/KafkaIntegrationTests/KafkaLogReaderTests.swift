import Foundation
import Kafka
import Synchronization
import Testing

@Suite("Reading a topic back (KafkaLogReader) against the real broker", .serialized)
struct KafkaLogReaderTests {
    /// A writer appending every few hundred milliseconds (a sender setting paused messages aside)
    /// must not keep the reader chasing the end. The broker holds an empty fetch until data
    /// arrives, so partition EOF never comes while such a writer goes on: before the reader fixed
    /// each partition's end at its first fetched record it timed out here every time.
    @Test("a topic still being written is read to where it stood, in time, with everything written before the read")
    func readWhileWriting() async throws {
        let topic = KafkaTestSupport.uniqueName("readback")
        try await KafkaTestSupport.createTopic(topic, partitions: 3)
        let producer = try KafkaTestSupport.producer()
        @Sendable func write(_ range: Range<Int>) async throws {
            _ = try await producer.send(range.map { KafkaProducerRecord(topic: topic, key: "k\($0)", value: Array("r\($0)".utf8)) }).map { try $0.get() }
        }
        try await write(0..<300)
        let writer = Task {
            var next = 300
            while !Task.isCancelled {
                try await Task.sleep(for: .milliseconds(300))
                try await write(next..<next + 50)
                next += 50
            }
        }
        defer { writer.cancel() }
        try await Task.sleep(for: .milliseconds(500))
        let reader = KafkaLogReader(configuration: try KafkaTestSupport.client(), logger: KafkaTestSupport.logger)
        for _ in 0..<10 {
            let read = Mutex<[String]>([])
            try await reader.read(topic: topic, timeout: .seconds(10)) { records in
                read.withLock { $0 += records.map { String(decoding: $0.value, as: UTF8.self) } }
            }
            #expect(Set(read.withLock { $0 }).isSuperset(of: (0..<300).map { "r\($0)" }), "every record written before the read is read back")
        }
        writer.cancel()
        _ = await writer.result
        await producer.close()
    }
}
