import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A process's Prometheus exposition (`/metrics` on its operations port), read as an operator's
/// scraper reads it.
package enum OpsMetrics {
    /// The sum of the series named `name` (exactly: `name{...}` or `name value`) whose label text
    /// contains every one of `labels` (such as `lane="bulk"`); nil when no series matches.
    package static func value(_ name: String, labels: [String] = [], port: Int) async throws -> Double? {
        let (data, _) = try await URLSession.shared.data(from: URL(string: "http://127.0.0.1:\(port)/metrics")!)
        return value(name, labels: labels, in: String(decoding: data, as: UTF8.self))
    }

    /// The same, from an exposition's text.
    package static func value(_ name: String, labels: [String] = [], in text: String) -> Double? {
        let values = text.split(separator: "\n").filter { line in
            (line.hasPrefix(name + "{") || line.hasPrefix(name + " ")) && labels.allSatisfy { line.contains($0) }
        }.compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        return values.isEmpty ? nil : values.reduce(0, +)
    }
}
