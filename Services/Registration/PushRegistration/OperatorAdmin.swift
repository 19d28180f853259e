import Foundation
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// `/admin/v1/operators` (docs/admin-api.md, "Operators and roles"): operators and their
/// personal tokens, as events on `push.catalog` that the catalog projection applies to
/// `push.operators` and `push.operator_tokens` (through `OperatorDirectory`). Each change is
/// answered once the projection shows it, so a token issued is accepted by the next request.
package struct OperatorAdmin: Sendable {
    let catalog: CatalogAdmin
    let directory: OperatorDirectory

    package init(catalog: CatalogAdmin, directory: OperatorDirectory) {
        self.catalog = catalog
        self.directory = directory
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
