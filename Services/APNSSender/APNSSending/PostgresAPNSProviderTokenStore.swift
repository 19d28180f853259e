import APNS
import Foundation
import Logging
import PostgresNIO
import PushCredentials

/// The provider token in force per APNs signing key, shared by every apns-sender process through
/// `push.apns_provider_tokens` (migration 7): APNs refuses a second new token for a key within 20
/// minutes, whichever process minted it. The token is sealed with the current credentials key (its id in
/// `sealing_key_id`), bound
/// to its team and key. Two statements per refresh (about once every 50 minutes per key), none per
/// request.
package struct PostgresAPNSProviderTokenStore: APNSProviderTokenStore {
    let postgres: PostgresClient
    let cipher: CredentialCipher
    let logger: Logger

    package init(postgres: PostgresClient, cipher: CredentialCipher, logger: Logger) {
        self.postgres = postgres
        self.cipher = cipher
        self.logger = logger
    }

    package func exchange(_ candidate: APNSSharedProviderToken, replacingIssuedBefore bound: Date) async throws -> APNSSharedProviderToken {
        let context = Self.context(teamId: candidate.teamId, keyId: candidate.keyId, keyFingerprint: candidate.keyFingerprint)
        let sealed = try cipher.seal(Data(candidate.jwt.utf8), context: context)
        try await postgres.query(
            """
            INSERT INTO push.apns_provider_tokens AS t (team_id, key_id, key_fingerprint, sealed_token, sealing_key_id, issued_at, updated_at)
            VALUES (
                \(candidate.teamId), \(candidate.keyId), \(candidate.keyFingerprint), \(ByteBuffer(data: sealed.ciphertext)), \(sealed.keyId),
                \(candidate.issuedAt), now())
            ON CONFLICT (team_id, key_id, key_fingerprint) DO UPDATE
                SET sealed_token = excluded.sealed_token, sealing_key_id = excluded.sealing_key_id, issued_at = excluded.issued_at, updated_at = now()
                WHERE t.issued_at < \(bound)
            """,
            logger: logger
        )
        guard let stored = try await current(teamId: candidate.teamId, keyId: candidate.keyId, keyFingerprint: candidate.keyFingerprint) else {
            throw StoreError(detail: "no provider token stored for key \(candidate.keyId) right after storing one")
        }
        return stored
    }

    package func current(teamId: String, keyId: String, keyFingerprint: String) async throws -> APNSSharedProviderToken? {
        let rows = try await postgres.query(
            """
            SELECT sealed_token, sealing_key_id, issued_at FROM push.apns_provider_tokens
            WHERE team_id = \(teamId) AND key_id = \(keyId) AND key_fingerprint = \(keyFingerprint)
            """,
            logger: logger
        )
        for try await (sealed, sealingKeyId, issuedAt) in rows.decode((ByteBuffer, String?, Date).self) {
            let jwt = try cipher.open(
                Data(buffer: sealed), keyId: sealingKeyId, context: Self.context(teamId: teamId, keyId: keyId, keyFingerprint: keyFingerprint))
            return APNSSharedProviderToken(
                teamId: teamId, keyId: keyId, keyFingerprint: keyFingerprint, jwt: String(decoding: jwt, as: UTF8.self), issuedAt: issuedAt
            )
        }
        return nil
    }

    static func context(teamId: String, keyId: String, keyFingerprint: String) -> String {
        CredentialCipher.apnsProviderTokenContext(teamId: teamId, keyId: keyId, keyFingerprint: keyFingerprint)
    }

    struct StoreError: Error, CustomStringConvertible {
        var detail: String
        var description: String { detail }
    }
}
