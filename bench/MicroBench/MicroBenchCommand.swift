import Crypto
import Foundation
import MallocInterposerSwift
import PushEvents
import PushPlanning
import PushStore

/// The hot paths of one notification, each measured alone: time per operation (the median of
/// several rounds) and heap allocations per operation (counted by ordo-one's malloc
/// interposer). Allocation counts are deterministic for a build, so they are what
/// `--check` compares with `bench/micro-thresholds.json`: a change that adds an allocation to a
/// hot path fails CI (scripts/test runs the debug build's check; `bench/micro.sh` the release
/// build's). Times are printed with a reference measured in the same run where one exists
/// (AES-GCM alone for the seal, Foundation's JSON coders for the event codecs), never checked.
///
///     micro-bench [--rounds 7] [--check bench/micro-thresholds.json --configuration debug|release]
@main
struct MicroBenchCommand {
    struct Case {
        var name: String
        var what: String
        /// The reference it is compared with, if any.
        var reference: String?
        var run: () throws -> Void
        var runReference: (() throws -> Void)?
    }

    struct Figures {
        var nanoseconds: Double
        var allocations: Double
        var bytes: Double
    }

    static func main() {
        do {
            try run()
        } catch {
            print("micro-bench: \(error)")
            exit(1)
        }
    }

    static func run() throws {
        var arguments = Array(CommandLine.arguments.dropFirst())
        func option(_ name: String) -> String? {
            guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
            defer { arguments.removeSubrange(index...index + 1) }
            return arguments[index + 1]
        }
        let rounds = Int(option("--rounds") ?? "") ?? 7
        let thresholds = option("--check")
        // The build's own configuration unless told: thresholds are per configuration.
        let configuration = option("--configuration") ?? builtConfiguration
        guard arguments.isEmpty else {
            throw Usage("unknown arguments \(arguments); usage: micro-bench [--rounds N] [--check FILE --configuration debug|release]")
        }
        guard countsAllocations() else {
            throw Usage("the malloc interposer does not see this process's allocations (run with LD_PRELOAD=<libMallocInterposerSwift.so>)")
        }

        let cases = try Fixture().cases()
        print("micro-bench: \(builtConfiguration) build, \(rounds) rounds per case; time is the median round, allocations per operation")
        print("case                 ns/op    allocs/op   bytes/op   reference                     ref ns/op  ratio")
        var measured: [String: Figures] = [:]
        for item in cases {
            let figures = try measure(item.run, rounds: rounds)
            measured[item.name] = figures
            var line =
                pad(item.name, 18) + pad(format(figures.nanoseconds, 0), 10, right: true) + pad(format(figures.allocations, 2), 13, right: true)
                + pad(format(figures.bytes, 0), 11, right: true)
            if let reference = item.reference, let runReference = item.runReference {
                let ceiling = try measure(runReference, rounds: rounds)
                line +=
                    "   " + pad(reference, 28) + pad(format(ceiling.nanoseconds, 0), 11, right: true)
                    + pad(format(ceiling.nanoseconds / figures.nanoseconds, 2), 7, right: true)
            }
            print(line)
        }
        for item in cases { print("  \(item.name): \(item.what)") }
        if let thresholds {
            try check(measured, against: thresholds, configuration: configuration)
        }
    }

    /// Whether counting is live: the interposer's malloc must be the one this process calls.
    static func countsAllocations() -> Bool {
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.hook()
        let probe = [Int](repeating: 1, count: Int.random(in: 100...200))
        MallocInterposerSwift.unhook()
        withExtendedLifetime(probe) {}
        return MallocInterposerSwift.getStatistics().mallocCount > 0
    }

    /// Runs `operation` until a round takes about 20 ms, then `rounds` timed rounds of that many
    /// operations, and one more round with allocations counted.
    static func measure(_ operation: () throws -> Void, rounds: Int) throws -> Figures {
        let clock = ContinuousClock()
        var perRound = 16
        while true {
            let started = clock.now
            for _ in 0..<perRound { try operation() }
            if clock.now - started > .milliseconds(20) || perRound >= 1 << 20 { break }
            perRound *= 2
        }
        var times: [Double] = []
        for _ in 0..<rounds {
            let started = clock.now
            for _ in 0..<perRound { try operation() }
            let elapsed = clock.now - started
            times.append(Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9)
        }
        MallocInterposerSwift.initialize()
        MallocInterposerSwift.hook()
        for _ in 0..<perRound { try operation() }
        MallocInterposerSwift.unhook()
        let statistics = MallocInterposerSwift.getStatistics()
        let median = times.sorted()[times.count / 2] / Double(perRound)
        return Figures(
            nanoseconds: median, allocations: Double(statistics.mallocCount) / Double(perRound),
            bytes: Double(statistics.mallocBytesCount) / Double(perRound))
    }

    /// Fails naming every case whose allocations per operation exceed its threshold.
    static func check(_ measured: [String: Figures], against path: String, configuration: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        guard let document = try JSONSerialization.jsonObject(with: data) as? [String: Any],
            let limits = document[configuration] as? [String: Any]
        else { throw Usage("\(path) has no \"\(configuration)\" object of thresholds") }
        var failures: [String] = []
        for (name, figures) in measured.sorted(by: { $0.key < $1.key }) {
            guard let limit = (limits[name] as? [String: Any])?["allocations"] as? Double else {
                failures.append("\(name): no threshold in \(path) (\(configuration))")
                continue
            }
            if figures.allocations > limit + 0.005 {
                failures.append("\(name): \(format(figures.allocations, 2)) allocations per operation, threshold \(format(limit, 2))")
            }
        }
        for name in limits.keys.sorted() where measured[name] == nil {
            failures.append("\(name): a threshold in \(path) for a case that no longer exists")
        }
        guard failures.isEmpty else {
            for failure in failures { print("micro-bench: FAIL \(failure)") }
            throw Usage("\(failures.count) case(s) over their allocation thresholds (\(path), \(configuration))")
        }
        print("micro-bench: every case within its allocation threshold (\(path), \(configuration))")
    }

    static func format(_ value: Double, _ decimals: Int) -> String { String(format: "%.\(decimals)f", value) }

    static func pad(_ text: String, _ width: Int, right: Bool = false) -> String {
        let space = String(repeating: " ", count: max(0, width - text.count))
        return right ? space + text : text + space
    }
}

#if DEBUG
    let builtConfiguration = "debug"
#else
    let builtConfiguration = "release"
#endif

struct Usage: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
