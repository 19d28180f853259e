/// A setting is missing or malformed; the message names the setting and what is expected.
package struct ConfigurationError: Error, Sendable, CustomStringConvertible {
    package var message: String
    package init(_ message: String) { self.message = message }
    package var description: String { message }
}
