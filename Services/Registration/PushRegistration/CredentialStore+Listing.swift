import Foundation
import PostgresNIO
import PushCredentials

extension CredentialStore {
    /// Every stored credential of the app, newest first, without secrets (the admin API's list).
    func list(appId: UUID) async throws -> [CredentialOutput] {
        let rows = try await postgres.query(
            "SELECT credential_id, kind, fingerprint, metadata::text, created_at FROM push.app_credentials WHERE app_id = \(appId) ORDER BY created_at DESC",
            logger: logger
        )
        var credentials: [CredentialOutput] = []
        for try await (id, kind, fingerprint, details, created) in rows.decode((UUID, String, String, String, Date).self) {
            let decoded = (try? JSONDecoder().decode([String: String].self, from: Data(details.utf8))) ?? [:]
            credentials.append(CredentialOutput(credentialId: id, appId: appId, kind: kind, fingerprint: fingerprint, details: decoded, createdAt: created))
        }
        return credentials
    }
}
