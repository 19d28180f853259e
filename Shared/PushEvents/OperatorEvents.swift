import Foundation

/// A named operator of the admin APIs was created or changed (`PUT /admin/v1/operators/{name}`):
/// `push.catalog`, key `operator:<name>`. Its role says what it may do, `services` on which
/// services (nil: every service); an inactive operator's tokens are refused at once
/// (docs/admin-api.md, "Operators and roles").
package struct OperatorDefined: PushEvent, Hashable {
    package static let eventType = "OperatorDefined"
    package static let eventVersion = 1

    package var name: String
    /// `admin`, `marketer`, `analyst`, `support` or `privacy`.
    package var role: String
    package var services: [String]?
    package var active: Bool

    package init(name: String, role: String, services: [String]?, active: Bool) {
        self.name = name
        self.role = role
        self.services = services
        self.active = active
    }
}

/// A personal API token was issued to an operator: `push.catalog`, key `operator:<name>`. Only
/// the SHA-256 digest of the token's secret part is in the event (the token is shown once, in
/// the answer that issued it).
package struct OperatorTokenIssued: PushEvent, Hashable {
    package static let eventType = "OperatorTokenIssued"
    package static let eventVersion = 1

    package var tokenId: UUID
    package var operatorName: String
    /// Lowercase hex SHA-256 of the token's secret part.
    package var digest: String
    package var expiresAt: Date
    /// `session` for a console sign-in (`POST /admin/v1/sessions`); absent: a personal API token.
    package var purpose: String?

    package init(tokenId: UUID, operatorName: String, digest: String, expiresAt: Date, purpose: String? = nil) {
        self.tokenId = tokenId
        self.operatorName = operatorName
        self.digest = digest
        self.expiresAt = expiresAt
        self.purpose = purpose
    }
}

/// An operator's console password was set (`PUT /admin/v1/operators/{name}/password`):
/// `push.catalog`, key `operator:<name>`. Only its bcrypt hash is in the event (a slow, salted
/// hash: the password itself is never stored nor sent).
package struct OperatorPasswordSet: PushEvent, Hashable {
    package static let eventType = "OperatorPasswordSet"
    package static let eventVersion = 1

    package var name: String
    /// `$2b$<cost>$...`: bcrypt's own format, salt included.
    package var passwordHash: String

    package init(name: String, passwordHash: String) {
        self.name = name
        self.passwordHash = passwordHash
    }
}

/// A personal API token was revoked: `push.catalog`, key `operator:<name>`.
package struct OperatorTokenRevoked: PushEvent, Hashable {
    package static let eventType = "OperatorTokenRevoked"
    package static let eventVersion = 1

    package var tokenId: UUID
    package var operatorName: String

    package init(tokenId: UUID, operatorName: String) {
        self.tokenId = tokenId
        self.operatorName = operatorName
    }
}
