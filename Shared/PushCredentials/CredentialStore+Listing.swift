import Foundation
import Logging
import PostgresNIO

/// A stored credential as it may be shown: what the admin API lists, never the secret.
package struct StoredCredential: Sendable, Equatable {
    package var credentialId: UUID
    package var kind: String
    package var fingerprint: String
    package var details: [String: String]
    package var createdAt: Date
}

extension CredentialStore {
    /// Every stored credential of the app, newest first, without secrets (the admin API's list).
    package func list(appId: UUID) async throws -> [StoredCredential] {
        let rows = try await postgres.query(
            "SELECT credential_id, kind, fingerprint, metadata::text, created_at FROM push.app_credentials WHERE app_id = \(appId) ORDER BY created_at DESC",
            logger: logger
        )
        var credentials: [StoredCredential] = []
        for try await (id, kind, fingerprint, details, created) in rows.decode((UUID, String, String, String, Date).self) {
            let decoded = (try? JSONDecoder().decode([String: String].self, from: Data(details.utf8))) ?? [:]
            credentials.append(StoredCredential(credentialId: id, kind: kind, fingerprint: fingerprint, details: decoded, createdAt: created))
        }
        return credentials
    }

    /// Deletes every stored credential of a deleted app, in the catalog projection's transaction
    /// (`AppDeleted`): a deleted app's secrets are gone for good.
    package static func deleteAll(appId: UUID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("DELETE FROM push.app_credentials WHERE app_id = \(appId)", logger: logger)
    }

    /// Deletes the app's stored credentials if the app was deleted meanwhile (a rotation racing
    /// the delete: `AppCredentialsSet` projected after `AppDeleted`), in the projection's transaction.
    package static func deleteIfAppDeleted(appId: UUID, on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query(
            """
            DELETE FROM push.app_credentials
            WHERE app_id = \(appId) AND EXISTS (SELECT 1 FROM push.deleted_apps WHERE app_id = \(appId))
            """,
            logger: logger
        )
    }
}
