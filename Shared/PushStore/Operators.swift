import Foundation
import Logging
import PostgresNIO
import PushEvents

/// What an operator of the admin APIs is (docs/admin-api.md, "Operators and roles").
package enum AdminRole: String, Sendable, CaseIterable, Codable {
    /// Everything, operators included.
    case admin
    /// Deliveries, templates, segments and frequency caps, reports: of their services.
    case marketer
    /// Reports and the catalog, read only: of their services.
    case analyst
    /// Devices: look up, lift a quarantine, unsubscribe and resubscribe.
    case support
    /// Erasure requests.
    case privacy

    /// What the role may do (on the services the operator may act on).
    package var permissions: Set<AdminPermission> {
        switch self {
        case .admin: Set(AdminPermission.allCases)
        case .marketer: [.session, .catalogRead, .contentWrite, .deliveriesRead, .deliveriesWrite]
        case .analyst: [.session, .catalogRead, .deliveriesRead]
        case .support: [.session, .catalogRead, .devicesRead, .devicesWrite]
        case .privacy: [.session, .catalogRead, .erasure]
        }
    }
}

/// What an admin API route needs; every route declares one.
package enum AdminPermission: String, Sendable, CaseIterable {
    /// Read and end one's own session (every role).
    case session
    /// Read services, apps (never a credential's secret), templates, segments, frequency caps.
    case catalogRead = "catalog:read"
    /// Create, change and delete services and apps.
    case catalogWrite = "catalog:write"
    /// Upload an app's provider credentials.
    case credentialsWrite = "credentials:write"
    /// Define templates and segments, set frequency caps.
    case contentWrite = "content:write"
    /// Look devices up.
    case devicesRead = "devices:read"
    /// Lift a quarantine, unsubscribe, resubscribe.
    case devicesWrite = "devices:write"
    /// Erase a person or a device.
    case erasure
    /// Read deliveries and their reports.
    case deliveriesRead = "deliveries:read"
    /// Submit, preview, pause, resume and cancel deliveries.
    case deliveriesWrite = "deliveries:write"
    /// Manage operators and their tokens.
    case operators
}

/// Who made an admin API request: a named operator (a personal token), or the bootstrap
/// `PUSH_ADMIN_TOKEN` (an `admin` on every service).
package struct AdminPrincipal: Sendable, Equatable {
    package var name: String
    package var role: AdminRole
    /// The services it may act on; nil: every service.
    package var services: Set<String>?

    package init(name: String, role: AdminRole, services: Set<String>?) {
        self.name = name
        self.role = role
        self.services = services
    }

    /// The bootstrap token's principal.
    package static let bootstrap = AdminPrincipal(name: "bootstrap", role: .admin, services: nil)

    package func has(_ permission: AdminPermission) -> Bool { role.permissions.contains(permission) }

    package func mayActOn(service: String) -> Bool { services?.contains(service) ?? true }
}

/// A personal API token: `pat_<token id, 32 hex digits>_<secret, 43 base64url characters>`. The
/// id finds the stored digest; the secret (256 random bits) is compared by its SHA-256 digest,
/// which is all the channel keeps: a fast hash suffices for a secret with that much entropy
/// (a password needs a slow one).
package enum OperatorToken {
    package static func make() -> (tokenId: UUID, token: String, digest: String) {
        let tokenId = UUID()
        let text = Data(RandomBytes.make(count: 32)).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
        let id = tokenId.uuidString.lowercased().replacingOccurrences(of: "-", with: "")
        return (tokenId, "pat_\(id)_\(text)", TokenDigest.of(text))
    }

    /// The token id and the secret part of a token of this form; nil for anything else.
    package static func parse(_ token: Substring) -> (tokenId: UUID, secret: Substring)? {
        let parts = token.split(separator: "_", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "pat", parts[1].utf8.count == 32, !parts[2].isEmpty else { return nil }
        let hex = parts[1]
        var uuid = ""
        for (index, character) in hex.enumerated() {
            if [8, 12, 16, 20].contains(index) { uuid.append("-") }
            uuid.append(character)
        }
        guard let tokenId = UUID(uuidString: uuid) else { return nil }
        return (tokenId, parts[2])
    }
}

/// The operators and their tokens (`push.operators`, `push.operator_tokens`; this module owns
/// them: the registration's catalog projection applies the events through `apply`, and every
/// admin API resolves its bearer tokens through `principal(token:)`).
package struct OperatorDirectory: Sendable {
    let postgres: PostgresClient
    let logger: Logger

    package init(postgres: PostgresClient, logger: Logger) {
        self.postgres = postgres
        self.logger = logger
    }

    /// The operator a personal token names, when the token is well-formed, known, not revoked,
    /// not expired and its operator active; nil otherwise. Read from the table on each request,
    /// so a revocation or a deactivation holds from the next request.
    package func principal(token: Substring, now: Date = Date()) async throws -> AdminPrincipal? {
        guard let (tokenId, secret) = OperatorToken.parse(token) else { return nil }
        let rows = try await postgres.query(
            """
            SELECT t.digest, o.name, o.role, o.services
            FROM push.operator_tokens t JOIN push.operators o ON o.name = t.operator_name
            WHERE t.token_id = \(tokenId) AND t.revoked_at IS NULL AND t.expires_at > \(now) AND o.active
            """,
            logger: logger)
        for try await (digest, name, role, services) in rows.decode((String, String, String, [String]?).self) {
            guard Self.equal(digest, TokenDigest.of(String(secret))), let role = AdminRole(rawValue: role) else { return nil }
            return AdminPrincipal(name: name, role: role, services: services.map(Set.init))
        }
        return nil
    }

    /// Digests compared in constant time.
    static func equal(_ left: String, _ right: String) -> Bool {
        let (a, b) = (Array(left.utf8), Array(right.utf8))
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }

    /// One operator as the admin API lists it.
    package struct Operator: Codable, Sendable, Equatable {
        package var name: String
        package var role: String
        package var services: [String]?
        package var active: Bool
        package var definedAt: Date
        /// Whether it has a console password (never the password nor its hash).
        package var passwordSet: Bool
        package var tokens: [Token]

        package init(name: String, role: String, services: [String]?, active: Bool, definedAt: Date, passwordSet: Bool = false, tokens: [Token]) {
            self.name = name
            self.role = role
            self.services = services
            self.active = active
            self.definedAt = definedAt
            self.passwordSet = passwordSet
            self.tokens = tokens
        }
    }

    /// A token as listed: never its secret nor its digest.
    package struct Token: Codable, Sendable, Equatable {
        package var tokenId: UUID
        /// `api` (a personal API token) or `session` (a console sign-in).
        package var purpose: String
        package var issuedAt: Date
        package var expiresAt: Date
        package var revokedAt: Date?
    }

    /// The bcrypt hash of an active operator's console password, with the operator; nil when
    /// there is no such active operator or it has no password.
    package func passwordHash(of name: String) async throws -> (hash: String, principal: AdminPrincipal)? {
        let rows = try await postgres.query(
            "SELECT password_hash, role, services FROM push.operators WHERE name = \(name) AND active AND password_hash IS NOT NULL",
            logger: logger)
        for try await (hash, role, services) in rows.decode((String, String, [String]?).self) {
            guard let role = AdminRole(rawValue: role) else { return nil }
            return (hash, AdminPrincipal(name: name, role: role, services: services.map(Set.init)))
        }
        return nil
    }

    /// The role of the operator named, active or not; nil when there is none (the audit trail
    /// of a refused sign-in names only operators that exist).
    package func role(of name: String) async throws -> AdminRole? {
        let rows = try await postgres.query("SELECT role FROM push.operators WHERE name = \(name)", logger: logger)
        for try await role in rows.decode(String.self) { return AdminRole(rawValue: role) }
        return nil
    }

    /// Every operator (by name) with its tokens, or the one named.
    package func operators(named name: String? = nil) async throws -> [Operator] {
        var result: [Operator] = []
        let rows = try await postgres.query(
            """
            SELECT name, role, services, active, defined_at, password_hash IS NOT NULL FROM push.operators
            WHERE \(name)::text IS NULL OR name = \(name) ORDER BY name
            """,
            logger: logger)
        for try await (name, role, services, active, definedAt, passwordSet) in rows.decode((String, String, [String]?, Bool, Date, Bool).self) {
            result.append(
                Operator(name: name, role: role, services: services, active: active, definedAt: definedAt, passwordSet: passwordSet, tokens: []))
        }
        let tokens = try await postgres.query(
            """
            SELECT operator_name, token_id, purpose, issued_at, expires_at, revoked_at FROM push.operator_tokens
            WHERE \(name)::text IS NULL OR operator_name = \(name) ORDER BY issued_at, token_id
            """,
            logger: logger)
        for try await (owner, tokenId, purpose, issuedAt, expiresAt, revokedAt) in tokens.decode((String, UUID, String, Date, Date, Date?).self) {
            if let index = result.firstIndex(where: { $0.name == owner }) {
                result[index].tokens.append(Token(tokenId: tokenId, purpose: purpose, issuedAt: issuedAt, expiresAt: expiresAt, revokedAt: revokedAt))
            }
        }
        return result
    }

    /// Applies an operator event in the catalog projection's transaction.
    package static func apply(_ event: OperatorDefined, at: Date, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO push.operators (name, role, services, active, defined_at)
            VALUES (\(event.name), \(event.role), \(event.services), \(event.active), \(at))
            ON CONFLICT (name) DO UPDATE SET role = excluded.role, services = excluded.services, active = excluded.active,
                                             defined_at = excluded.defined_at
            """,
            logger: logger)
    }

    package static func apply(_ event: OperatorTokenIssued, at: Date, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            INSERT INTO push.operator_tokens (token_id, operator_name, digest, expires_at, issued_at, purpose)
            VALUES (\(event.tokenId), \(event.operatorName), \(event.digest), \(event.expiresAt), \(at), \(event.purpose ?? "api"))
            ON CONFLICT (token_id) DO NOTHING
            """,
            logger: logger)
    }

    /// A password set for an operator that does not exist (yet) changes nothing: the admin API
    /// refuses it, so only a hand-made event could do that.
    package static func apply(_ event: OperatorPasswordSet, at: Date, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "UPDATE push.operators SET password_hash = \(event.passwordHash), password_set_at = \(at) WHERE name = \(event.name)",
            logger: logger)
    }

    package static func apply(_ event: OperatorTokenRevoked, at: Date, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            "UPDATE push.operator_tokens SET revoked_at = coalesce(revoked_at, \(at)) WHERE token_id = \(event.tokenId)",
            logger: logger)
    }
}
