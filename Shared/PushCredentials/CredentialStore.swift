import Foundation
import Logging
import PostgresNIO
import PushEvents

/// Sealed provider secrets in `push.app_credentials`. The registration service stores them; the
/// senders read the active one (`push.apps.credential_id`, set by `AppCredentialsSet`). Older
/// rows stay so that a rotation never leaves a sender without a key it was using a moment ago.
package struct CredentialStore: Sendable {
    package let postgres: PostgresClient
    package let cipher: CredentialCipher
    package let logger: Logger

    package init(postgres: PostgresClient, cipher: CredentialCipher, logger: Logger) {
        self.postgres = postgres
        self.cipher = cipher
        self.logger = logger
    }

    /// Seals `secret` (bound to the app) and stores it with what may be shown about it.
    package func store(
        _ secret: ProviderSecret, fingerprint: String, details: [String: String], appId: UUID, credentialId: UUID
    ) async throws {
        let sealed = try cipher.seal(try JSONEncoder().encode(secret), appId: appId)
        let details = String(decoding: try JSONEncoder().encode(details), as: UTF8.self)
        try await postgres.query(
            """
            INSERT INTO push.app_credentials (credential_id, app_id, kind, fingerprint, metadata, ciphertext, sealing_key_id)
            VALUES (\(credentialId), \(appId), \(secret.kind), \(fingerprint), \(details)::jsonb, \(ByteBuffer(data: sealed.ciphertext)), \(sealed.keyId))
            """,
            logger: logger
        )
    }

    /// The app's active credentials, decrypted, with the reference that names them without the
    /// secret (for the senders: the fingerprint keys their connection pools). Opened under the key
    /// the row names; a key the ring does not hold throws `CredentialCipherError` naming its id.
    package func activeCredential(appId: UUID) async throws -> (reference: CredentialReference, secret: ProviderSecret)? {
        let rows = try await postgres.query(
            """
            SELECT c.credential_id, c.kind, c.fingerprint, c.ciphertext, c.sealing_key_id FROM push.apps a
            JOIN push.app_credentials c ON c.credential_id = a.credential_id
            WHERE a.app_id = \(appId)
            """,
            logger: logger
        )
        for try await (id, kind, fingerprint, sealed, keyId) in rows.decode((UUID, String, String, ByteBuffer, String?).self) {
            let secret = try JSONDecoder().decode(ProviderSecret.self, from: try cipher.open(Data(buffer: sealed), keyId: keyId, appId: appId))
            return (CredentialReference(credentialId: id, kind: kind, fingerprint: fingerprint), secret)
        }
        return nil
    }

    /// Whether the app was deleted (`push.deleted_apps`, kept by the catalog projection from
    /// `AppDeleted`): its credentials are gone for good, not merely missing yet.
    package func appIsDeleted(appId: UUID) async throws -> Bool {
        let rows = try await postgres.query("SELECT EXISTS (SELECT 1 FROM push.deleted_apps WHERE app_id = \(appId))", logger: logger)
        for try await deleted in rows.decode(Bool.self) { return deleted }
        return false
    }

    /// The app's active secret, decrypted (nil when it has none).
    package func active(appId: UUID) async throws -> ProviderSecret? {
        try await activeCredential(appId: appId)?.secret
    }
}
