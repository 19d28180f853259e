import Crypto
import Foundation
import Synchronization

/// Checks APNs provider tokens (ES256 JWTs) the way APNs does: signature against the team's
/// registered key, age under an hour, and no more than one new token per key every 20 minutes
/// (a token accepted once stays valid until it is an hour old).
///
/// Verified tokens are cached by their text, so a sender reusing one token (as it should) costs
/// one dictionary look-up per request rather than an ECDSA verification.
package final class APNsProviderTokenVerifier: Sendable {
    /// A registered signing key: APNs knows the public half of each .p8 key by team and key id.
    package struct SigningKey: Sendable {
        package var teamID: String
        package var keyID: String
        package var publicKey: P256.Signing.PublicKey

        package init(teamID: String, keyID: String, publicKey: P256.Signing.PublicKey) {
            self.teamID = teamID
            self.keyID = keyID
            self.publicKey = publicKey
        }

        /// Reads `TEAM:KEYID:PATH`, where PATH is a PEM public key or a PEM/.p8 private key.
        package init(argument: String) throws {
            let parts = argument.split(separator: ":", maxSplits: 2, omittingEmptySubsequences: false)
            guard parts.count == 3, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw SimulatorConfigurationError("--key wants TEAM:KEYID:PATH, got \(argument)")
            }
            let pem = try String(contentsOfFile: String(parts[2]), encoding: .utf8)
            try self.init(teamID: String(parts[0]), keyID: String(parts[1]), pem: pem)
        }

        package init(teamID: String, keyID: String, pem: String) throws {
            self.teamID = teamID
            self.keyID = keyID
            if let privateKey = try? P256.Signing.PrivateKey(pemRepresentation: pem) {
                self.publicKey = privateKey.publicKey
            } else {
                self.publicKey = try P256.Signing.PublicKey(pemRepresentation: pem)
            }
        }
    }

    /// A token that passed the checks, with the key it is bound to.
    package struct Identity: Sendable, Equatable {
        /// "TEAM:KEYID"
        package var key: String
        package var issuedAt: Int
    }

    /// Why a token was refused; the raw value is the APNs reason.
    package enum Rejection: String, Sendable, Error {
        case missingProviderToken = "MissingProviderToken"
        case invalidProviderToken = "InvalidProviderToken"
        case expiredProviderToken = "ExpiredProviderToken"
        case tooManyProviderTokenUpdates = "TooManyProviderTokenUpdates"

        package var status: Int {
            self == .tooManyProviderTokenUpdates ? 429 : 403
        }
    }

    /// APNs refuses tokens older than an hour.
    package static let maximumTokenAge = 3600
    /// APNs refuses a new token for a key less than 20 minutes after the previous one.
    package static let minimumRefreshInterval = 1200

    private struct State {
        var verified: [String: Identity] = [:]
        /// The newest token accepted for each key, with its `iat`.
        var current: [String: (token: String, issuedAt: Int)] = [:]
        /// Every token accepted so far: they stay valid until an hour old, so requests still
        /// carrying the previous token while a sender switches to its new one are not refused.
        var accepted: Set<String> = []
    }

    private let keys: [String: SigningKey]
    private let state = Mutex(State())
    private let now: @Sendable () -> Int

    package init(keys: [SigningKey], now: @escaping @Sendable () -> Int = { Int(Date().timeIntervalSince1970) }) {
        self.keys = Dictionary(keys.map { ("\($0.teamID):\($0.keyID)", $0) }, uniquingKeysWith: { _, last in last })
        self.now = now
    }

    package var isEnabled: Bool { !self.keys.isEmpty }

    /// Checks the `authorization` header value of one request.
    package func verify(authorization: String?) -> Result<Identity, Rejection> {
        guard let authorization, !authorization.isEmpty else { return .failure(.missingProviderToken) }
        guard authorization.count > 7, authorization.prefix(7).lowercased() == "bearer " else {
            return .failure(.invalidProviderToken)
        }
        let token = String(authorization.dropFirst(7)).trimmingCharacters(in: .whitespaces)
        let cached = self.state.withLock { $0.verified[token] }
        let identity: Identity
        if let cached {
            identity = cached
        } else {
            guard let verified = self.verifySignature(token) else { return .failure(.invalidProviderToken) }
            identity = verified
        }
        if self.now() - identity.issuedAt > Self.maximumTokenAge {
            return .failure(.expiredProviderToken)
        }
        return self.state.withLock { state in
            if state.verified.count > 10_000 { state.verified.removeAll(keepingCapacity: true) }
            state.verified[token] = identity
            if state.accepted.contains(token) { return .success(identity) }
            // A new token for the key: at most one every 20 minutes.
            if let current = state.current[identity.key], identity.issuedAt < current.issuedAt + Self.minimumRefreshInterval {
                return .failure(.tooManyProviderTokenUpdates)
            }
            if state.accepted.count > 10_000 { state.accepted.removeAll(keepingCapacity: true) }
            state.accepted.insert(token)
            state.current[identity.key] = (token, identity.issuedAt)
            return .success(identity)
        }
    }

    /// Forgets the token history (the control API's reset).
    package func reset() {
        self.state.withLock { $0 = State() }
    }

    private func verifySignature(_ token: String) -> Identity? {
        guard let jwt = CompactJWT(token),
            jwt.header["alg"] == "ES256",
            let keyID = jwt.header["kid"],
            let teamID = jwt.string("iss"),
            let issuedAt = Self.issuedAt(of: jwt),
            let key = self.keys["\(teamID):\(keyID)"],
            let signature = try? P256.Signing.ECDSASignature(rawRepresentation: jwt.signature),
            key.publicKey.isValidSignature(signature, for: Data(jwt.signingInput.utf8))
        else { return nil }
        return Identity(key: "\(teamID):\(keyID)", issuedAt: issuedAt)
    }

    /// The `iat` claim as APNs reads it: a JSON number or a string of decimal digits (APNSwift
    /// sends `"iat":"1700000000"`, and APNs accepts it). Anything else (a non-numeric string, a
    /// missing claim) makes the token invalid.
    static func issuedAt(of jwt: CompactJWT) -> Int? {
        if let number = jwt.number("iat"), number.isFinite, abs(number) < 1e15 { return Int(number) }
        if let text = jwt.string("iat"), !text.isEmpty, text.count <= 15, text.allSatisfy({ $0.isASCII && $0.isNumber }) {
            return Int(text)
        }
        return nil
    }
}

/// A command-line or file problem found at start.
package struct SimulatorConfigurationError: Error, CustomStringConvertible {
    package var description: String

    package init(_ description: String) {
        self.description = description
    }
}
