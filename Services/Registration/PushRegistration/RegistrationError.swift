/// Why a registration was refused, with the HTTP status the SDK endpoints answer and a one-line
/// reason for the body. Reasons name the problem, never echo tokens or parameter values.
public struct RegistrationError: Error, Sendable, Hashable, CustomStringConvertible {
    public var status: Int
    public var reason: String

    public init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    public static func badRequest(_ reason: String) -> RegistrationError { RegistrationError(status: 400, reason: reason) }
    public static func unknownIntegrationKey() -> RegistrationError { RegistrationError(status: 404, reason: "unknown integration key (mobileAppUuid)") }

    public var description: String { "\(status) \(reason)" }
}
