import ArgumentParser
import Foundation
import Kafka

/// Reads `--records` records with a `KafkaConsumer` in a new consumer group, from the beginning
/// of the topic, through `batches`, storing offsets after each batch as an application would.
///
/// The clock starts when the first batch arrives, so the group join (about 3 s on Tansu, mostly
/// the rebalance window) is left out; `with_join_seconds` reports the time from subscribing.
/// `cpu_seconds` is the process's CPU time from the first batch to the last record.
struct ConsumeBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "consume",
        abstract: "Read N records in a new consumer group and store their offsets."
    )

    @OptionGroup var options: BenchmarkOptions

    @Option(help: "Consumer group id. Default: a new group per run (kafka-bench-<random>).")
    var group: String?

    @Option(help: "Records per batch at most (KafkaConsumerConfiguration.maxBatchSize).")
    var batchSize: Int = 500

    @Option(help: "Give up after this many seconds without reaching --records.")
    var timeout: Int = 120

    @Flag(help: "Print a progress line (seconds since the first batch, records so far) to stderr whenever 100 ms have passed, to see stalls.")
    var timeline = false

    func validate() throws {
        guard batchSize > 0, timeout > 0 else { throw ValidationError("--batch-size and --timeout must be positive") }
    }

    func run() async throws {
        let logger = options.logger(label: "kafka-bench.consume")
        let configuration = KafkaConsumerConfiguration(
            client: try options.clientConfiguration(),
            groupID: group ?? "kafka-bench-\(UUID().uuidString.prefix(8).lowercased())",
            topics: [options.topic],
            offsetReset: "earliest",
            // The short group timeouts environment.md recommends for Tansu.
            sessionTimeoutMilliseconds: 6_000,
            heartbeatIntervalMilliseconds: 1_000,
            maxPollIntervalMilliseconds: 60_000,
            maxBatchSize: batchSize
        )
        let clock = ContinuousClock()
        let subscribed = clock.now
        let consumer = try KafkaConsumer(configuration: configuration, logger: logger)
        let wanted = options.records
        let expectedSize = options.size
        let timeline = self.timeline

        let tally = try await withThrowingTaskGroup(of: Tally?.self) { group in
            group.addTask {
                var tally = Tally()
                for try await batch in consumer.batches {
                    if tally.first == nil {
                        tally.first = clock.now
                        tally.cpuAtFirst = processCPUTime()
                    }
                    for index in batch.indices where batch[index].value.count != expectedSize {
                        tally.wrongSize += 1
                    }
                    tally.records += batch.count
                    tally.batches += 1
                    try consumer.storeOffsets(for: batch)
                    if timeline { tally.report(clock.now) }
                    if tally.records >= wanted { break }
                }
                tally.last = clock.now
                tally.cpuAtLast = processCPUTime()
                return tally
            }
            group.addTask { [timeout] in
                try await Task.sleep(for: .seconds(timeout))
                return nil
            }
            let first = try await group.next() ?? nil
            group.cancelAll()
            return first
        }
        await consumer.close()

        guard let tally, let first = tally.first, let last = tally.last, tally.records >= wanted else {
            throw BenchmarkFailure("did not read \(wanted) records within \(timeout) s")
        }
        var result = BenchmarkResult(operation: "consume", records: tally.records, bytes: expectedSize, elapsed: last - first)
        result.extra = [
            ("batches", String(tally.batches)),
            ("wrong_size", String(tally.wrongSize)),
            ("cpu_seconds", fixed((tally.cpuAtLast - tally.cpuAtFirst).seconds, 3)),
            ("with_join_seconds", fixed((last - subscribed).seconds, 3)),
        ]
        print(result.line)
        if tally.wrongSize > 0 {
            throw BenchmarkFailure("\(tally.wrongSize) records did not have \(expectedSize) bytes")
        }
    }

    private struct Tally: Sendable {
        var records = 0
        var batches = 0
        var wrongSize = 0
        var first: ContinuousClock.Instant?
        var last: ContinuousClock.Instant?
        var reported: ContinuousClock.Instant?
        var cpuAtFirst = Duration.zero
        var cpuAtLast = Duration.zero

        mutating func report(_ now: ContinuousClock.Instant) {
            guard let first else { return }
            if let reported, now - reported < .milliseconds(100) { return }
            reported = now
            FileHandle.standardError.write(Data("timeline \(fixed((now - first).seconds, 3)) s \(records) records\n".utf8))
        }
    }
}
