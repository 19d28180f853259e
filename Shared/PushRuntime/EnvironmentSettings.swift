import Foundation
import PushStore

/// Typed access to environment variables (12-factor configuration). A malformed value fails
/// with a message naming the variable; secrets are never echoed.
public struct EnvironmentSettings: Sendable {
    public var values: [String: String]

    public init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    public func string(_ key: String, default defaultValue: String) -> String {
        values[key].flatMap { $0.isEmpty ? nil : $0 } ?? defaultValue
    }

    public func int(_ key: String, default defaultValue: Int) throws(ConfigurationError) -> Int {
        guard let text = values[key], !text.isEmpty else { return defaultValue }
        guard let value = Int(text) else { throw ConfigurationError("\(key) must be an integer, got \"\(text)\"") }
        return value
    }

    /// An integer that must lie in `range`.
    public func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let value = try int(key, default: defaultValue)
        guard range.contains(value) else { throw ConfigurationError("\(key) must be between \(range.lowerBound) and \(range.upperBound), got \(value)") }
        return value
    }
}
