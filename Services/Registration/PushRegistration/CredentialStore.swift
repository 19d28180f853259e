import Foundation
import Logging
import PostgresNIO
import PushEvents

/// Sealed provider secrets in `push.app_credentials`. The admin API stores them; the senders
/// read the active one (`push.apps.credential_id`, set by `AppCredentialsSet`). Older rows stay
/// so that a rotation never leaves a sender without a key it was using a moment ago.
public struct CredentialStore: Sendable {
    let postgres: PostgresClient
    let cipher: CredentialCipher
    let logger: Logger

    public init(postgres: PostgresClient, cipher: CredentialCipher, logger: Logger) {
        self.postgres = postgres
        self.cipher = cipher
        self.logger = logger
    }

    func store(_ credential: ValidatedCredential, appId: UUID, credentialId: UUID) async throws {
        let sealed = try cipher.seal(credential.secret, appId: appId)
        let details = String(decoding: try JSONEncoder().encode(credential.details), as: UTF8.self)
        try await postgres.query(
            """
            INSERT INTO push.app_credentials (credential_id, app_id, kind, fingerprint, metadata, ciphertext)
            VALUES (\(credentialId), \(appId), \(credential.kind), \(credential.fingerprint), \(details)::jsonb, \(ByteBuffer(data: sealed)))
            """,
            logger: logger
        )
    }

    /// Every stored credential of the app, newest first, without secrets.
    public func list(appId: UUID) async throws -> [CredentialOutput] {
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

    /// The app's active credentials, decrypted, with the reference that names them without the
    /// secret (for the senders: the fingerprint keys their connection pools).
    public func activeCredential(appId: UUID) async throws -> (reference: CredentialReference, secret: CredentialInput)? {
        let rows = try await postgres.query(
            """
            SELECT c.credential_id, c.kind, c.fingerprint, c.ciphertext FROM push.apps a
            JOIN push.app_credentials c ON c.credential_id = a.credential_id
            WHERE a.app_id = \(appId)
            """,
            logger: logger
        )
        for try await (id, kind, fingerprint, sealed) in rows.decode((UUID, String, String, ByteBuffer).self) {
            let secret = try cipher.open(Data(buffer: sealed), appId: appId)
            let input = try JSONDecoder().decode(CredentialInput.self, from: secret)
            return (CredentialReference(credentialId: id, kind: kind, fingerprint: fingerprint), input)
        }
        return nil
    }

    /// The app's active credentials, decrypted (for the senders).
    public func active(appId: UUID) async throws -> CredentialInput? {
        let rows = try await postgres.query(
            """
            SELECT c.ciphertext FROM push.apps a JOIN push.app_credentials c ON c.credential_id = a.credential_id
            WHERE a.app_id = \(appId)
            """,
            logger: logger
        )
        for try await sealed in rows.decode(ByteBuffer.self) {
            let secret = try cipher.open(Data(buffer: sealed), appId: appId)
            return try JSONDecoder().decode(CredentialInput.self, from: secret)
        }
        return nil
    }
}
