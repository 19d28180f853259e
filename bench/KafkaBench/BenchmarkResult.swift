import Foundation

/// One measurement, printed as a single `key=value` line that `bench/kafka.sh` parses:
///
///     swift produce records=200000 bytes=100 seconds=0.250000 rate=800000/s mb_s=80.0 failures=0 ...
///
/// `rate` is records per second and `mb_s` payload megabytes (10^6 bytes, values only) per
/// second, both over `seconds`. Extra fields (`failures=`, `with_close_seconds=`...) follow.
struct BenchmarkResult {
    var operation: String
    var records: Int
    var bytes: Int
    var elapsed: Duration
    var extra: [(String, String)] = []

    var seconds: Double { elapsed.seconds }
    var rate: Double { seconds > 0 ? Double(records) / seconds : 0 }
    var megabytesPerSecond: Double { seconds > 0 ? Double(records) * Double(bytes) / seconds / 1_000_000 : 0 }

    var line: String {
        var fields = [
            "swift", operation,
            "records=\(records)",
            "bytes=\(bytes)",
            "seconds=\(fixed(seconds, 6))",
            "rate=\(fixed(rate, 0))/s",
            "mb_s=\(fixed(megabytesPerSecond, 1))",
        ]
        fields += extra.map { "\($0.0)=\($0.1)" }
        return fields.joined(separator: " ")
    }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) * 1e-18
    }
}

/// `value` with `digits` decimals.
func fixed(_ value: Double, _ digits: Int) -> String {
    String(format: "%.\(digits)f", value)
}

/// A run that did not do what it measured (failed deliveries, missing records): exits non-zero.
struct BenchmarkFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// CPU time (user + system) of the whole process so far, librdkafka's threads included.
func processCPUTime() -> Duration {
    var usage = rusage()
    #if canImport(Glibc)
        getrusage(RUSAGE_SELF.rawValue, &usage)
    #else
        getrusage(RUSAGE_SELF, &usage)
    #endif
    let microseconds =
        (Int64(usage.ru_utime.tv_sec) + Int64(usage.ru_stime.tv_sec)) * 1_000_000
        + Int64(usage.ru_utime.tv_usec) + Int64(usage.ru_stime.tv_usec)
    return .microseconds(microseconds)
}
