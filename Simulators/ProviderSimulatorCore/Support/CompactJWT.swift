import Foundation
import PushWire

/// A JWS in compact serialisation, split and decoded but not yet verified.
///
/// The simulators verify signatures themselves (ES256 for APNs, RS256 for Google OAuth) so that
/// every rejection maps to the provider's exact reason.
package struct CompactJWT: Sendable {
    /// `base64url(header) + "." + base64url(claims)`: the bytes the signature covers.
    package var signingInput: String
    package var signature: Data
    package var header: [String: String]
    /// Claims as JSON values (numbers as `Double`, strings as `String`).
    package var claims: [String: SendableJSONValue]

    package init?(_ token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3,
            let headerData = Base64URL.decode(parts[0]),
            let claimsData = Base64URL.decode(parts[1]),
            let signature = Base64URL.decode(parts[2]),
            let header = JSON.object(headerData),
            let claims = JSON.object(claimsData)
        else { return nil }
        self.signingInput = "\(parts[0]).\(parts[1])"
        self.signature = signature
        self.header = header.compactMapValues { $0 as? String }
        self.claims = claims.mapValues(SendableJSONValue.init)
    }

    package func string(_ claim: String) -> String? {
        if case .string(let value) = self.claims[claim] { return value }
        return nil
    }

    /// A numeric claim (seconds since the epoch for `iat`/`exp`).
    package func number(_ claim: String) -> Double? {
        if case .number(let value) = self.claims[claim] { return value }
        return nil
    }
}

/// The scalar subset of JSON a JWT claim can hold, in a `Sendable` form.
package enum SendableJSONValue: Sendable, Equatable {
    case string(String)
    case number(Double)
    case other

    init(_ value: Any) {
        switch value {
        case let string as String: self = .string(string)
        case let number as NSNumber: self = .number(number.doubleValue)
        default: self = .other
        }
    }
}
