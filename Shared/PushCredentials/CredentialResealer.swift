import Foundation
import Logging
import PostgresNIO

/// Seals every stored secret again under the current credentials key: the rows of
/// `push.app_credentials` and `push.apns_provider_tokens` whose `sealing_key_id` is not the
/// current key's id (`pushctl credentials reseal`, docs/operations.md "Rotating the credentials
/// key").
///
/// Rows are read in primary-key order, `batchSize` per transaction (locked with `FOR UPDATE`, so
/// a concurrent writer waits for the batch rather than being overwritten). A row no configured key
/// opens is left as it is and counted under its reason; the others are resealed. Running it again
/// changes nothing: a row already under the current key is not selected.
package struct CredentialResealer: Sendable {
    /// What one table's pass did. Counts and key ids only, never secrets.
    package struct Report: Sendable, Hashable {
        package var table: String
        package var resealed = 0
        package var alreadyCurrent = 0
        /// Rows left as they were, per reason (`CredentialCipherError.description`).
        package var unreadable: [String: Int] = [:]
    }

    package let postgres: PostgresClient
    package let cipher: CredentialCipher
    package let batchSize: Int
    package let logger: Logger

    package init(postgres: PostgresClient, cipher: CredentialCipher, batchSize: Int = 100, logger: Logger) {
        self.postgres = postgres
        self.cipher = cipher
        self.batchSize = max(1, batchSize)
        self.logger = logger
    }

    /// Reseals both tables, app credentials first.
    package func reseal() async throws -> [Report] {
        [try await resealAppCredentials(), try await resealProviderTokens()]
    }

    package func resealAppCredentials() async throws -> Report {
        var report = Report(table: "push.app_credentials")
        report.alreadyCurrent = try await count("SELECT count(*)::int FROM push.app_credentials WHERE sealing_key_id = \(cipher.current.id)")
        var after = UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0))
        var full = true
        while full {
            let batchSize = self.batchSize
            let currentId = cipher.current.id
            let (last, read, outcome) = try await postgres.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    SELECT credential_id, app_id, sealing_key_id, ciphertext FROM push.app_credentials
                    WHERE credential_id > \(after) AND sealing_key_id IS DISTINCT FROM \(currentId)
                    ORDER BY credential_id LIMIT \(batchSize) FOR UPDATE
                    """,
                    logger: logger
                )
                var batch: [(id: UUID, appId: UUID, keyId: String?, sealed: ByteBuffer)] = []
                for try await (id, appId, keyId, sealed) in rows.decode((UUID, UUID, String?, ByteBuffer).self) {
                    batch.append((id, appId, keyId, sealed))
                }
                var outcome = Report(table: "")
                for row in batch {
                    let secret: Data
                    do throws(CredentialCipherError) {
                        secret = try cipher.open(Data(buffer: row.sealed), keyId: row.keyId, appId: row.appId)
                    } catch {
                        outcome.unreadable[error.description, default: 0] += 1
                        continue
                    }
                    let sealed = try cipher.seal(secret, appId: row.appId)
                    try await connection.query(
                        """
                        UPDATE push.app_credentials SET ciphertext = \(ByteBuffer(data: sealed.ciphertext)), sealing_key_id = \(sealed.keyId)
                        WHERE credential_id = \(row.id)
                        """,
                        logger: logger
                    )
                    outcome.resealed += 1
                }
                return (batch.last?.id, batch.count, outcome)
            }
            report.add(outcome)
            full = read == batchSize
            if let last { after = last }
        }
        return report
    }

    package func resealProviderTokens() async throws -> Report {
        var report = Report(table: "push.apns_provider_tokens")
        report.alreadyCurrent = try await count("SELECT count(*)::int FROM push.apns_provider_tokens WHERE sealing_key_id = \(cipher.current.id)")
        var after = ("", "", "")
        var full = true
        while full {
            let batchSize = self.batchSize
            let currentId = cipher.current.id
            let start = after
            let (last, read, outcome) = try await postgres.withTransaction(logger: logger) { connection in
                let rows = try await connection.query(
                    """
                    SELECT team_id, key_id, key_fingerprint, sealing_key_id, sealed_token FROM push.apns_provider_tokens
                    WHERE (team_id, key_id, key_fingerprint) > (\(start.0), \(start.1), \(start.2)) AND sealing_key_id IS DISTINCT FROM \(currentId)
                    ORDER BY team_id, key_id, key_fingerprint LIMIT \(batchSize) FOR UPDATE
                    """,
                    logger: logger
                )
                var batch: [(team: String, key: String, fingerprint: String, sealingKeyId: String?, sealed: ByteBuffer)] = []
                for try await row in rows.decode((String, String, String, String?, ByteBuffer).self) {
                    batch.append(row)
                }
                var outcome = Report(table: "")
                for row in batch {
                    let context = CredentialCipher.apnsProviderTokenContext(teamId: row.team, keyId: row.key, keyFingerprint: row.fingerprint)
                    let token: Data
                    do throws(CredentialCipherError) {
                        token = try cipher.open(Data(buffer: row.sealed), keyId: row.sealingKeyId, context: context)
                    } catch {
                        outcome.unreadable[error.description, default: 0] += 1
                        continue
                    }
                    let sealed = try cipher.seal(token, context: context)
                    try await connection.query(
                        """
                        UPDATE push.apns_provider_tokens SET sealed_token = \(ByteBuffer(data: sealed.ciphertext)), sealing_key_id = \(sealed.keyId)
                        WHERE team_id = \(row.team) AND key_id = \(row.key) AND key_fingerprint = \(row.fingerprint)
                        """,
                        logger: logger
                    )
                    outcome.resealed += 1
                }
                return (batch.last.map { ($0.team, $0.key, $0.fingerprint) }, batch.count, outcome)
            }
            report.add(outcome)
            full = read == batchSize
            if let last { after = last }
        }
        return report
    }

    private func count(_ query: PostgresQuery) async throws -> Int {
        let rows = try await postgres.query(query, logger: logger)
        for try await value in rows.decode(Int.self) { return value }
        return 0
    }
}

extension CredentialResealer.Report {
    mutating func add(_ batch: Self) {
        resealed += batch.resealed
        unreadable.merge(batch.unreadable, uniquingKeysWith: +)
    }
}
