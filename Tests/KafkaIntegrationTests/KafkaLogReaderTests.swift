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

    /// A partition written by many separate produce requests holds many record batches; a
    /// broker may answer a fetch with fewer of them than the partition holds.
    @Test("a partition written in many separate batches is read back whole, in order")
    func manyBatches() async throws {
        let topic = KafkaTestSupport.uniqueName("readback-batches")
        try await KafkaTestSupport.createTopic(topic, partitions: 2)
        let producer = try KafkaTestSupport.producer()
        for batch in 0..<20 {
            let records = (0..<100).map { index in
                KafkaProducerRecord(topic: topic, key: Array("k".utf8), value: Array("r\(batch * 100 + index)".utf8), partition: Int32(batch % 2))
            }
            for result in await producer.send(records) { _ = try result.get() }
        }
        await producer.close()
        let reader = KafkaLogReader(configuration: try KafkaTestSupport.client(), logger: KafkaTestSupport.logger)
        for _ in 0..<3 {
            let read = Mutex<[Int32: [Int64]]>([:])
            try await reader.read(topic: topic, timeout: .seconds(20)) { records in
                read.withLock { read in for record in records { read[record.partition, default: []].append(record.offset) } }
            }
            let offsets = read.withLock { $0 }
            #expect(offsets[0] == Array(0..<1_000) && offsets[1] == Array(0..<1_000), "read \(offsets.mapValues(\.count))")
        }
    }

    /// A caller that orders records across partitions (`pushctl topics upgrade-history`'s merge)
    /// takes a partition as finished when the reader says so: once per partition, an empty one
    /// included, and only when every record of the partition has reached `body` or is in the
    /// batch `body` receives next.
    @Test("atEnd names each partition once, empty ones too, never before its last record is in hand")
    func atEndPerPartition() async throws {
        let topic = KafkaTestSupport.uniqueName("readback-ends")
        try await KafkaTestSupport.createTopic(topic, partitions: 4)
        let producer = try KafkaTestSupport.producer()
        // Partitions 0 and 1 hold records written in one produce batch each; 2 and 3 are empty.
        let written = (0..<40).map { KafkaProducerRecord(topic: topic, key: Array("k\($0)".utf8), value: Array("r\($0)".utf8), partition: Int32($0 % 2)) }
        for result in await producer.send(written) { _ = try result.get() }
        await producer.close()
        struct Seen {
            var records: [Int32: Int] = [:]
            var ends: [Int32] = []
            var pending: [Int32: Int] = [:]
            var early: [Int32] = []
        }
        let seen = Mutex(Seen())
        let reader = KafkaLogReader(configuration: try KafkaTestSupport.client(), logger: KafkaTestSupport.logger)
        let ended: @Sendable (Int32) -> Void = { partition in
            seen.withLock {
                $0.ends.append(partition)
                $0.pending[partition] = $0.records[partition, default: 0]
            }
        }
        try await reader.read(topic: topic, timeout: .seconds(20), atEnd: ended) { records in
            seen.withLock { seen in
                for record in records { seen.records[record.partition, default: 0] += 1 }
                // A partition announced before this batch must be complete with it.
                for (partition, _) in seen.pending where seen.records[partition, default: 0] != (partition < 2 ? 20 : 0) {
                    seen.early.append(partition)
                }
                seen.pending = [:]
            }
        }
        let result = seen.withLock { $0 }
        #expect(result.ends.sorted() == [0, 1, 2, 3])
        #expect(result.records == [0: 20, 1: 20])
        #expect(result.early == [], "partitions announced before their last record")
    }
}
