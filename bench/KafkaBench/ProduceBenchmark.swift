import ArgumentParser
import Foundation
import Kafka

/// Sends `--records` records of `--size` bytes with `KafkaProducer.send(_:)` (the array API) and
/// waits for every delivery report.
///
/// Records go out in chunks of `--chunk`, with up to `--in-flight` chunks awaiting their reports
/// at once. Records come from `--input` (the file `bench/kafka.sh` also feeds to kcat) or are
/// generated: keys `String(index % 1000)`, values `--size` bytes of `x`.
/// The clock starts at the first `send`, `--start-delay-ms` after the producer was created (so
/// connecting and acquiring the idempotent producer id are not measured), and stops when the
/// last delivery report is in. `cpu_seconds` is the process's CPU time over the same window.
struct ProduceBenchmark: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "produce",
        abstract: "Send N records and await every delivery report."
    )

    @OptionGroup var options: BenchmarkOptions

    @Option(help: "Records per send(_:) call.")
    var chunk: Int = 10_000

    @Option(help: "send(_:) calls awaiting their delivery reports at the same time.")
    var inFlight: Int = 4

    @Option(help: "linger.ms (kcat gets the same value).")
    var lingerMs: Int = 5

    @Option(help: "compression.type (kcat gets the same value).")
    var compression: String = "lz4"

    @Option(
        help:
            "Idle time between creating the producer and the first send, so that connecting and acquiring the idempotent producer id (about 0.5 s on Tansu) stay out of the measurement. bench/kafka.sh gives kcat the same head start."
    )
    var startDelayMs: Int = 1_000

    @Option(help: "Read the records from this kcat input file (key<TAB>value per line); it replaces --records and --size.")
    var input: String?

    func validate() throws {
        guard chunk > 0, inFlight > 0 else { throw ValidationError("--chunk and --in-flight must be positive") }
        guard startDelayMs >= 0 else { throw ValidationError("--start-delay-ms must not be negative") }
    }

    func run() async throws {
        let logger = options.logger(label: "kafka-bench.produce")
        let configuration = KafkaProducerConfiguration(
            client: try options.clientConfiguration(),
            idempotent: true,
            compression: compression,
            lingerMilliseconds: lingerMs
        )
        let created = ContinuousClock.now
        let producer = try KafkaProducer(configuration: configuration, logger: logger)
        try await producer.checkBroker(timeout: .seconds(10))

        let workload: ProduceWorkload
        if let input {
            workload = try ProduceWorkload(topic: options.topic, file: input, delimiter: UInt8(ascii: "\t"))
        } else {
            workload = ProduceWorkload(topic: options.topic, count: options.records, size: options.size)
        }
        let size = workload.records.first?.value.count ?? 0
        let sent = workload.records.count
        let clock = ContinuousClock()
        try await clock.sleep(until: created + .milliseconds(startDelayMs))
        let start = clock.now
        let cpuAtStart = processCPUTime()
        let outcome = await Self.sendAll(workload, with: producer, chunk: chunk, inFlight: inFlight)
        let elapsed = clock.now - start
        let cpu = processCPUTime() - cpuAtStart
        await producer.close()
        let total = clock.now - start

        var result = BenchmarkResult(operation: "produce", records: sent, bytes: size, elapsed: elapsed)
        result.extra = [
            ("failures", String(outcome.failures)),
            ("cpu_seconds", fixed(cpu.seconds, 3)),
            ("with_close_seconds", fixed(total.seconds, 3)),
        ]
        print(result.line)
        if let error = outcome.firstError {
            throw BenchmarkFailure("\(outcome.failures) of \(sent) records failed; first error: \(error)")
        }
    }

    private struct Outcome: Sendable {
        var failures = 0
        var firstError: KafkaError?

        mutating func add(_ other: Outcome) {
            failures += other.failures
            if firstError == nil { firstError = other.firstError }
        }
    }

    /// Sends every chunk, keeping at most `inFlight` `send` calls outstanding.
    private static func sendAll(_ workload: ProduceWorkload, with producer: KafkaProducer, chunk: Int, inFlight: Int) async -> Outcome {
        let count = workload.records.count
        let chunks = stride(from: 0, to: count, by: chunk).map { $0..<min($0 + chunk, count) }
        return await withTaskGroup(of: Outcome.self) { group in
            var total = Outcome()
            var next = chunks.makeIterator()
            func submit() -> Bool {
                guard let range = next.next() else { return false }
                group.addTask {
                    var outcome = Outcome()
                    for result in await producer.send(workload.chunk(range)) {
                        if case .failure(let error) = result {
                            outcome.failures += 1
                            if outcome.firstError == nil { outcome.firstError = error }
                        }
                    }
                    return outcome
                }
                return true
            }
            for _ in 0..<inFlight {
                guard submit() else { break }
            }
            while let finished = await group.next() {
                total.add(finished)
                _ = submit()
            }
            return total
        }
    }
}

/// The records to send, built before the clock starts (kcat, too, gets its input prepared).
struct ProduceWorkload: Sendable {
    let records: [KafkaProducerRecord]

    /// Keys cycle through this many values: the key of record `i` is `String(i % 1000)`.
    static let distinctKeys = 1000

    /// `count` records with the same `size`-byte value (`x` repeated). Keys and the value are
    /// shared by every record (arrays are copy-on-write), so this costs no payload copies.
    init(topic: String, count: Int, size: Int) {
        let value = [UInt8](repeating: UInt8(ascii: "x"), count: size)
        let keys = (0..<Self.distinctKeys).map { Array(String($0).utf8) }
        records = (0..<count).map { KafkaProducerRecord(topic: topic, key: keys[$0 % Self.distinctKeys], value: value) }
    }

    /// The records of a kcat input file: one record a line, `key<delimiter>value`, the format
    /// of `kcat -P -K <delimiter>`. `bench/kafka.sh` gives both producers the same file.
    init(topic: String, file: String, delimiter: UInt8) throws {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw BenchmarkFailure("cannot read \(file)")
        }
        let bytes = [UInt8](data)
        var records: [KafkaProducerRecord] = []
        for line in bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true) {
            guard let split = line.firstIndex(of: delimiter) else {
                records.append(KafkaProducerRecord(topic: topic, key: nil, value: Array(line)))
                continue
            }
            records.append(KafkaProducerRecord(topic: topic, key: Array(line[..<split]), value: Array(line[line.index(after: split)...])))
        }
        self.records = records
    }

    func chunk(_ range: Range<Int>) -> [KafkaProducerRecord] { Array(records[range]) }
}
