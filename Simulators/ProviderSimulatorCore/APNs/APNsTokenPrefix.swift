/// Device-token prefixes that make the APNs simulator answer with a fixed error, so tests can
/// provoke every outcome without control calls. Prefixed tokens skip the hex-format check;
/// the request must otherwise be valid (headers, auth, payload) to reach the prefix rule.
package enum APNsTokenPrefix: CaseIterable, Sendable {
    /// `dead…` → 410 Unregistered, with `timestamp`.
    case unregistered
    /// `bad0…` → 400 BadDeviceToken.
    case badDeviceToken
    /// `busy…` or `e429…` → 429 TooManyRequests.
    case tooManyRequests
    /// `e500…` → 500 InternalServerError.
    case internalServerError
    /// `e503…` → 503 ServiceUnavailable.
    case serviceUnavailable

    package var prefixes: [String] {
        switch self {
        case .unregistered: ["dead"]
        case .badDeviceToken: ["bad0"]
        case .tooManyRequests: ["busy", "e429"]
        case .internalServerError: ["e500"]
        case .serviceUnavailable: ["e503"]
        }
    }

    package var status: Int {
        switch self {
        case .unregistered: 410
        case .badDeviceToken: 400
        case .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable: 503
        }
    }

    package var reason: String {
        switch self {
        case .unregistered: "Unregistered"
        case .badDeviceToken: "BadDeviceToken"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        }
    }

    package init?(token: String) {
        let lowered = token.prefix(4).lowercased()
        guard let match = Self.allCases.first(where: { $0.prefixes.contains(lowered) }) else { return nil }
        self = match
    }
}
