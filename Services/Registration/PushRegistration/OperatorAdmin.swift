import Foundation
import HummingbirdBcrypt
import NIOPosix
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore
import Synchronization

/// `/admin/v1/operators` (docs/admin-api.md, "Operators and roles"): operators and their
/// personal tokens, as events on `push.catalog` that the catalog projection applies to
/// `push.operators` and `push.operator_tokens` (through `OperatorDirectory`). Each change is
/// answered once the projection shows it, so a token issued is accepted by the next request.
package struct OperatorAdmin: Sendable {
    let catalog: CatalogAdmin
    let directory: OperatorDirectory
    /// bcrypt's cost for new passwords (`REGISTRATION_BCRYPT_COST`).
    let bcryptCost: Int
    /// Wrong passwords per operator name (`REGISTRATION_SIGNIN_MAX_FAILURES`).
    let signInLimiter: SignInLimiter
    /// A bcrypt hash of a random password at `bcryptCost`, made at the first sign-in and checked
    /// when the operator named has no password, so that an unknown name costs as long as a wrong
    /// password (at the same cost: a decoy at another cost would tell the two apart).
    private let decoy = Decoy()

    private final class Decoy: Sendable {
        let hash = Mutex<String?>(nil)
    }

    package init(catalog: CatalogAdmin, directory: OperatorDirectory, bcryptCost: Int = 12, signInLimiter: SignInLimiter? = nil) {
        self.catalog = catalog
        self.directory = directory
        self.bcryptCost = bcryptCost
        self.signInLimiter = signInLimiter ?? SignInLimiter(maxFailures: 5, window: .seconds(900))
    }

    /// Body of `PUT /admin/v1/operators/{name}/password`.
    package struct PasswordInput: Codable, Sendable {
        package var password: String
    }

    /// Body of `POST /admin/v1/sessions`.
    package struct SignInInput: Codable, Sendable {
        package var `operator`: String
        package var password: String
        /// Minutes until the session ends: 1 to 10,080 (a week), default 480.
        package var minutes: Int?
    }

    /// Who a bearer token names (`GET /admin/v1/session`), and what it may do.
    package struct Identity: Codable, Sendable, Equatable {
        package var name: String
        package var role: String
        /// The services it may act on; absent: every service.
        package var services: [String]?
        package var permissions: [String]

        package init(_ principal: AdminPrincipal) {
            name = principal.name
            role = principal.role.rawValue
            services = principal.services.map { $0.sorted() }
            permissions = AdminPermission.allCases.filter(principal.has).map(\.rawValue)
        }
    }

    /// A console session: a token of purpose `session`, shown in this answer only.
    package struct Session: Codable, Sendable, Equatable {
        package var tokenId: UUID
        package var token: String
        package var expiresAt: Date
        package var identity: Identity
    }

    /// What a sign-in came to. `role` is the named operator's when it exists (the audit trail
    /// records only sign-ins of operators that exist: a password typed into the name box must
    /// not end up in it).
    package enum SignIn: Sendable {
        case signedIn(Session, AdminPrincipal)
        case refused(role: AdminRole?)
        case locked(seconds: Int, role: AdminRole?)
    }

    /// A password: 12 to 72 bytes of UTF-8 (bcrypt reads no further than 72).
    static func checkPassword(_ password: String) throws {
        guard (12...72).contains(password.utf8.count) else {
            throw RegistrationError.badRequest("a password is 12 to 72 bytes of UTF-8, got \(password.utf8.count)")
        }
    }

    /// Sets an operator's console password: its bcrypt hash in `OperatorPasswordSet`; answered
    /// once projected. The operator's open sessions stay open (end them by deactivating it or
    /// revoking their tokens).
    package func setPassword(operatorName: String, _ input: PasswordInput) async throws {
        _ = try await self.operator(named: operatorName)
        try Self.checkPassword(input.password)
        let (password, cost) = (input.password, UInt8(bcryptCost))
        // A few hundred milliseconds of CPU: off the event loops and the cooperative pool.
        let hash = try await NIOThreadPool.singleton.runIfActive { Bcrypt.hash(password, cost: cost) }
        _ = try await catalog.publish(key: "operator:\(operatorName)", OperatorPasswordSet(name: operatorName, passwordHash: hash))
        try await catalog.awaitProjection("SELECT count(*)::int FROM push.operators WHERE name = \(operatorName) AND password_hash = \(hash)")
    }

    /// The decoy hash (`decoy`), made on first use: called off the event loops.
    private func decoyHash() -> String {
        if let hash = decoy.hash.withLock({ $0 }) { return hash }
        let hash = Bcrypt.hash(UUID().uuidString, cost: UInt8(bcryptCost))
        return decoy.hash.withLock { stored in
            if let stored { return stored }
            stored = hash
            return hash
        }
    }

    /// Signs an operator in with its password: a session token of `minutes`, or refused. A
    /// name locked out after too many wrong passwords is refused before its password is looked at.
    package func signIn(_ input: SignInInput) async throws -> SignIn {
        let name = String(input.operator.prefix(64))
        if let seconds = signInLimiter.lockedFor(name) {
            return .locked(seconds: seconds, role: try await directory.role(of: name))
        }
        let minutes = input.minutes ?? 480
        guard (1...10_080).contains(minutes) else { throw RegistrationError.badRequest("minutes must be between 1 and 10080, got \(minutes)") }
        let found = try await directory.passwordHash(of: name)
        let (password, hash) = (input.password, found?.hash)
        let matches = try await NIOThreadPool.singleton.runIfActive { [self] in Bcrypt.verify(password, hash: hash ?? decoyHash()) && hash != nil }
        guard matches, let principal = found?.principal else {
            signInLimiter.failed(name)
            return .refused(role: try await directory.role(of: name))
        }
        signInLimiter.succeeded(name)
        let (tokenId, token, digest) = OperatorToken.make()
        let expiresAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + Double(minutes) * 60).rounded(.down))
        _ = try await catalog.publish(
            key: "operator:\(name)", OperatorTokenIssued(tokenId: tokenId, operatorName: name, digest: digest, expiresAt: expiresAt, purpose: "session"))
        try await catalog.awaitProjection("SELECT count(*)::int FROM push.operator_tokens WHERE token_id = \(tokenId)")
        return .signedIn(Session(tokenId: tokenId, token: token, expiresAt: expiresAt, identity: Identity(principal)), principal)
    }

    /// Body of `PUT /admin/v1/operators/{name}`.
    package struct OperatorInput: Codable, Sendable {
        package var role: String
        /// The services it may act on; absent or null: every service.
        package var services: [String]?
        /// Default true; false deactivates the operator (its tokens are refused from then on).
        package var active: Bool?
    }

    /// Body of `POST /admin/v1/operators/{name}/tokens`.
    package struct TokenInput: Codable, Sendable {
        /// Days until the token expires: 1 to 365, default 90.
        package var expiresInDays: Int?
    }

    /// The answer to an issued token: the only time the token is shown.
    package struct IssuedToken: Codable, Sendable, Equatable {
        package var tokenId: UUID
        package var token: String
        package var expiresAt: Date
    }

    /// Operator names: 1 to 64 letters, digits, `_`, `.`, `-`, `@` (an e-mail address fits).
    static func checkName(_ name: String) throws {
        let allowed = name.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "_.-@".unicodeScalars.contains($0))
        }
        guard (1...64).contains(name.count), allowed else {
            throw RegistrationError.badRequest("an operator name is 1 to 64 letters, digits, _, ., - or @, got '\(name.prefix(64))'")
        }
    }

    package func list() async throws -> [OperatorDirectory.Operator] {
        try await directory.operators()
    }

    package func `operator`(named name: String) async throws -> OperatorDirectory.Operator {
        guard let found = try await directory.operators(named: name).first else { throw RegistrationError(status: 404, reason: "no operator named \(name)") }
        return found
    }

    package func define(name: String, _ input: OperatorInput) async throws -> OperatorDirectory.Operator {
        try Self.checkName(name)
        guard let role = AdminRole(rawValue: input.role) else {
            throw RegistrationError.badRequest(
                "role must be one of \(AdminRole.allCases.map(\.rawValue).joined(separator: ", ")), got '\(input.role.prefix(32))'")
        }
        var services: [String]?
        if let names = input.services {
            let known = Set(try await catalog.services().map(\.name))
            for name in names where !known.contains(name) { throw RegistrationError.badRequest("no service named \(name.prefix(64))") }
            services = Array(Set(names)).sorted()
        }
        let active = input.active ?? true
        _ = try await catalog.publish(
            key: "operator:\(name)", OperatorDefined(name: name, role: role.rawValue, services: services, active: active))
        try await catalog.awaitProjection(
            """
            SELECT count(*)::int FROM push.operators
            WHERE name = \(name) AND role = \(role.rawValue) AND services IS NOT DISTINCT FROM \(services) AND active = \(active)
            """)
        // The projection behind (stored, not yet shown): the operator as defined, without tokens.
        return try await directory.operators(named: name).first
            ?? OperatorDirectory.Operator(name: name, role: role.rawValue, services: services, active: active, definedAt: Date(), tokens: [])
    }

    package func issueToken(operatorName: String, _ input: TokenInput) async throws -> IssuedToken {
        _ = try await self.operator(named: operatorName)
        let days = input.expiresInDays ?? 90
        guard (1...365).contains(days) else { throw RegistrationError.badRequest("expiresInDays must be between 1 and 365, got \(days)") }
        let (tokenId, token, digest) = OperatorToken.make()
        let expiresAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 + Double(days) * 86_400).rounded(.down))
        _ = try await catalog.publish(
            key: "operator:\(operatorName)", OperatorTokenIssued(tokenId: tokenId, operatorName: operatorName, digest: digest, expiresAt: expiresAt))
        try await catalog.awaitProjection("SELECT count(*)::int FROM push.operator_tokens WHERE token_id = \(tokenId)")
        return IssuedToken(tokenId: tokenId, token: token, expiresAt: expiresAt)
    }

    package func revokeToken(operatorName: String, tokenId: UUID) async throws {
        let found = try await self.operator(named: operatorName)
        guard found.tokens.contains(where: { $0.tokenId == tokenId }) else {
            throw RegistrationError(status: 404, reason: "operator \(operatorName) has no token \(tokenId.uuidString.lowercased())")
        }
        _ = try await catalog.publish(key: "operator:\(operatorName)", OperatorTokenRevoked(tokenId: tokenId, operatorName: operatorName))
        try await catalog.awaitProjection(
            "SELECT count(*)::int FROM push.operator_tokens WHERE token_id = \(tokenId) AND revoked_at IS NOT NULL")
    }
}
