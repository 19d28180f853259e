import PushRuntime

/// Why a registration was refused, with the HTTP status the SDK endpoints answer and a one-line
/// reason for the body. Reasons name the problem, never echo tokens or parameter values.
package struct RegistrationError: AdminRefusal, Sendable, Hashable, CustomStringConvertible {
    package var status: Int
    package var reason: String

    package init(status: Int, reason: String) {
        self.status = status
        self.reason = reason
    }

    package static func badRequest(_ reason: String) -> RegistrationError { RegistrationError(status: 400, reason: reason) }
    package static func unknownIntegrationKey() -> RegistrationError { RegistrationError(status: 404, reason: "unknown integration key (mobileAppUuid)") }

    package var description: String { "\(status) \(reason)" }
}
