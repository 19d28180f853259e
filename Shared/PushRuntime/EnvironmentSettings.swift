import Foundation
import PushStore

/// Typed access to environment variables (12-factor configuration). A malformed value fails
/// with a message naming the variable; secrets are never echoed.
package struct EnvironmentSettings: Sendable {
    package var values: [String: String]

    package init(_ values: [String: String] = ProcessInfo.processInfo.environment) {
        self.values = values
    }

    package func string(_ key: String, default defaultValue: String) -> String {
        values[key].flatMap { $0.isEmpty ? nil : $0 } ?? defaultValue
    }

    package func int(_ key: String, default defaultValue: Int) throws(ConfigurationError) -> Int {
        guard let text = values[key], !text.isEmpty else { return defaultValue }
        guard let value = Int(text) else { throw ConfigurationError("\(key) must be an integer, got \"\(text)\"") }
        return value
    }

    /// An integer that must lie in `range`.
    package func int(_ key: String, default defaultValue: Int, in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        let value = try int(key, default: defaultValue)
        guard range.contains(value) else { throw ConfigurationError("\(key) must be between \(range.lowerBound) and \(range.upperBound), got \(value)") }
        return value
    }

    /// librdkafka properties from the variables named `<prefix><NAME>`: the name lower-cased,
    /// each `_` a `.` (`KAFKA_PROPERTY_SASL_MECHANISMS=PLAIN` is `sasl.mechanisms=PLAIN`).
    /// The values are not checked here (librdkafka refuses an unknown property or a bad value
    /// when the client is made) and never echoed: some are secrets (`sasl.password`).
    package func kafkaProperties(prefix: String) throws(ConfigurationError) -> [String: String] {
        var properties: [String: String] = [:]
        for (key, value) in values where key.hasPrefix(prefix) {
            let name = key.dropFirst(prefix.count)
            guard !name.isEmpty, name.allSatisfy({ $0.isASCII && ($0.isUppercase || $0.isNumber || $0 == "_") }),
                name.first != "_", name.last != "_", !name.contains("__")
            else {
                throw ConfigurationError(
                    "\(key): the part after \(prefix) must be a librdkafka property name in upper case, dots written as _ (for example \(prefix)SECURITY_PROTOCOL)"
                )
            }
            properties[name.lowercased().replacingOccurrences(of: "_", with: ".")] = value
        }
        return properties
    }
}
