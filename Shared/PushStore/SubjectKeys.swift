import Foundation
import Logging
import NIOCore
import PostgresNIO
import PushEvents

/// Wraps the data keys under a key-encryption key held outside the database
/// (`PUSH_DATA_KEYS_KEY`: PushCredentials' `CredentialCipher` under its data-key settings), so
/// that a copy of the database alone opens nothing: a backup restored after an erasure does not
/// bring the person back while the key-encryption key is not in it (docs/architecture.md,
/// "Erasure").
package protocol DataKeyWrapping: Sendable {
    /// `key` sealed for the row `subjectId` (bound to it: a wrapped key moved to another row does
    /// not open), and the id of the key-encryption key that sealed it.
    func wrap(_ key: [UInt8], subjectId: UUID) throws -> (bytes: [UInt8], keyId: String)
    /// The key of the row `subjectId`, sealed by the key-encryption key `keyId`.
    func unwrap(_ bytes: [UInt8], keyId: String, subjectId: UUID) throws -> [UInt8]
}

/// A wrapped data key that this process cannot open: no key-encryption key is configured, or
/// not the one (nor a previous one) that wrapped it.
package struct DataKeyUnwrapError: Error, CustomStringConvertible {
    package var subjectId: UUID
    package var keyId: String
    package var configured: Bool

    package init(subjectId: UUID, keyId: String, configured: Bool) {
        self.subjectId = subjectId
        self.keyId = keyId
        self.configured = configured
    }

    package var description: String {
        configured
            ? "the data key of subject \(subjectId.uuidString.lowercased()) is wrapped under key-encryption key \(keyId), which is neither PUSH_DATA_KEYS_KEY nor one of PUSH_DATA_KEYS_PREVIOUS_KEYS"
            : "the data key of subject \(subjectId.uuidString.lowercased()) is wrapped under key-encryption key \(keyId): set PUSH_DATA_KEYS_KEY (or PUSH_DATA_KEYS_KEY_FILE)"
    }
}

/// The per-person data keys of crypto-shredding as stored (`push.subject_keys`, migrations 17
/// and 43; docs/architecture.md, "Erasure"): what the registration service, the planner and the
/// senders read and create. Keys are 32 random bytes; callers make their `SymmetricKey` of them.
/// A row holds its key wrapped (`wrap_key_id` names the key-encryption key) when the process
/// that created it had one (`DataKeyWrapping`), as it is otherwise (rows of a deployment without
/// one, or from before migration 43; `pushctl data-keys wrap` wraps them).
package enum SubjectKeys {
    /// A key as a row stores it: wrapped under `wrapping` when there is one.
    package static func stored(_ key: [UInt8], subjectId: UUID, wrapping: (any DataKeyWrapping)?) throws -> (bytes: [UInt8], keyId: String?) {
        guard let wrapping else { return (key, nil) }
        let wrapped = try wrapping.wrap(key, subjectId: subjectId)
        return (wrapped.bytes, wrapped.keyId)
    }

    /// The key of a row: its bytes as they are, or opened with `wrapping`.
    package static func opened(_ bytes: [UInt8], keyId: String?, subjectId: UUID, wrapping: (any DataKeyWrapping)?) throws -> [UInt8] {
        guard let keyId else { return bytes }
        guard let wrapping else { throw DataKeyUnwrapError(subjectId: subjectId, keyId: keyId, configured: false) }
        return try wrapping.unwrap(bytes, keyId: keyId, subjectId: subjectId)
    }

    /// The subject a device's data is sealed for: its person (`user:<userKey>`) or, without a
    /// user key, the device itself (`device:<appId>:<tokenDigest>`).
    package static func subject(userKey: String, appId: UUID, tokenDigest: String) -> String {
        userKey.isEmpty ? "device:\(appId.uuidString.lowercased()):\(tokenDigest)" : "user:\(userKey)"
    }

    /// The same subject as SQL computes it from a `push.subscriptions` row aliased `s`.
    package static let subjectOfSubscription =
        "CASE WHEN s.user_key = '' THEN 'device:' || s.app_id::text || ':' || s.token_digest ELSE 'user:' || s.user_key END"

    /// The keys of `ids` that still exist (an erased subject's is gone), in one query.
    package static func keys(
        _ ids: Set<UUID>, wrapping: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [UUID: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        return try await collect(try await connection.query(query(ids), logger: logger), wrapping: wrapping)
    }

    /// As `keys(_:wrapping:on:logger:)`, on a connection of the pool.
    package static func keys(_ ids: Set<UUID>, wrapping: (any DataKeyWrapping)?, postgres: PostgresClient, logger: Logger) async throws -> [UUID: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        return try await collect(try await postgres.query(query(ids), logger: logger), wrapping: wrapping)
    }

    private static func query(_ ids: Set<UUID>) -> PostgresQuery {
        "SELECT subject_id, data_key, wrap_key_id FROM push.subject_keys WHERE subject_id = ANY(\(Array(ids)))"
    }

    private static func collect(_ rows: PostgresRowSequence, wrapping: (any DataKeyWrapping)?) async throws -> [UUID: [UInt8]] {
        var keys: [UUID: [UInt8]] = [:]
        for try await (id, bytes, keyId) in rows.decode((UUID, ByteBuffer, String?).self) {
            keys[id] = try opened(Array(bytes.readableBytesView), keyId: keyId, subjectId: id, wrapping: wrapping)
        }
        return keys
    }

    /// 32 bytes from the system's cryptographically secure generator.
    package static func freshKey() -> [UInt8] {
        RandomBytes.make(count: 32)
    }

    /// The keys of `subjects` in the service, each created if missing, committed before they are
    /// returned (a record sealed under a key that a crash then lost could never be read). A
    /// subject another transaction is creating at the same moment may be absent: ask again.
    package static func create(
        serviceId: UUID, subjects: [String], wrapping: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [String: (id: UUID, key: [UInt8])] {
        guard !subjects.isEmpty else { return [:] }
        let ids = subjects.map { _ in RandomUUID.make() }
        let fresh = try ids.map { try stored(freshKey(), subjectId: $0, wrapping: wrapping) }
        let services = subjects.map { _ in serviceId }
        // In an explicit transaction: its COMMIT is answered before the keys are read and used.
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key, wrap_key_id)
                SELECT i, s, subject, decode(k, 'hex'), nullif(w, '')
                FROM unnest(\(ids)::uuid[], \(services)::uuid[], \(subjects)::text[], \(fresh.map { TokenDigest.hex($0.bytes) })::text[],
                            \(fresh.map { $0.keyId ?? "" })::text[]) AS x(i, s, subject, k, w)
                ON CONFLICT (service_id, subject) DO NOTHING
                """,
                logger: logger)
        }
        let rows = try await connection.query(
            "SELECT subject, subject_id, data_key, wrap_key_id FROM push.subject_keys WHERE service_id = \(serviceId) AND subject = ANY(\(subjects))",
            logger: logger)
        var keys: [String: (id: UUID, key: [UInt8])] = [:]
        for try await (subject, id, bytes, keyId) in rows.decode((String, UUID, ByteBuffer, String?).self) {
            keys[subject] = (id, try opened(Array(bytes.readableBytesView), keyId: keyId, subjectId: id, wrapping: wrapping))
        }
        return keys
    }

    /// The keys of `subjects` (service id and subject, of any services) that exist, in one
    /// statement outside any transaction: a row a plain statement reads is committed, so a key
    /// read here may be used at once.
    package static func read(
        _ subjects: [(serviceId: UUID, subject: String)], wrapping: (any DataKeyWrapping)?, postgres: PostgresClient, logger: Logger
    ) async throws -> [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] {
        guard !subjects.isEmpty else { return [] }
        let rows = try await postgres.query(
            """
            SELECT k.service_id, k.subject, k.subject_id, k.data_key, k.wrap_key_id
            FROM push.subject_keys k JOIN unnest(\(subjects.map(\.serviceId))::uuid[], \(subjects.map(\.subject))::text[]) AS w(service_id, subject)
              ON k.service_id = w.service_id AND k.subject = w.subject
            """,
            logger: logger)
        return try await collectRows(rows, wrapping: wrapping)
    }

    private static func collectRows(
        _ rows: PostgresRowSequence, wrapping: (any DataKeyWrapping)?
    ) async throws -> [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] {
        var keys: [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] = []
        for try await (serviceId, subject, id, bytes, keyId) in rows.decode((UUID, String, UUID, ByteBuffer, String?).self) {
            keys.append((serviceId, subject, id, try opened(Array(bytes.readableBytesView), keyId: keyId, subjectId: id, wrapping: wrapping)))
        }
        return keys
    }

    /// The keys of `subjects` (service id and subject, of any services), each created if missing,
    /// in one statement: the registration endpoints' batch. A subject whose row another
    /// transaction was creating at the same time is absent from the answer (this statement's
    /// snapshot does not see it): the caller asks again. Run it in a transaction and use the keys
    /// only once COMMIT has answered (PostgreSQL sends a statement's rows before an implicit
    /// transaction commits, so a key read from them could be lost with a crash of the server while
    /// a record sealed under it is stored).
    package static func createOrRead(
        _ subjects: [(serviceId: UUID, subject: String)], wrapping: (any DataKeyWrapping)?, on connection: PostgresConnection, logger: Logger
    ) async throws -> [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] {
        guard !subjects.isEmpty else { return [] }
        let ids = subjects.map { _ in RandomUUID.make() }
        let fresh = try ids.map { try stored(freshKey(), subjectId: $0, wrapping: wrapping) }
        let rows = try await connection.query(
            """
            WITH wanted AS (
                SELECT * FROM unnest(\(subjects.map(\.serviceId))::uuid[], \(subjects.map(\.subject))::text[], \(ids)::uuid[],
                                     \(fresh.map { TokenDigest.hex($0.bytes) })::text[], \(fresh.map { $0.keyId ?? "" })::text[])
                         AS w(service_id, subject, subject_id, data_key, wrap_key_id)),
            created AS (
                INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key, wrap_key_id)
                SELECT subject_id, service_id, subject, decode(data_key, 'hex'), nullif(wrap_key_id, '') FROM wanted
                ON CONFLICT (service_id, subject) DO NOTHING
                RETURNING service_id, subject, subject_id, data_key, wrap_key_id)
            SELECT service_id, subject, subject_id, data_key, wrap_key_id FROM created
            UNION ALL
            SELECT k.service_id, k.subject, k.subject_id, k.data_key, k.wrap_key_id
            FROM push.subject_keys k JOIN wanted w ON k.service_id = w.service_id AND k.subject = w.subject
            """,
            logger: logger)
        return try await collectRows(rows, wrapping: wrapping)
    }

    /// The anonymous subjects (`device:<appId>:<tokenDigest>`) of the device `tokenDigest` in the
    /// service, whatever the app: the subjects of a device whose subscription is gone (purged from
    /// quarantine, or of a deleted app), which no subscription row names any more.
    package static func deviceSubjects(serviceId: UUID, tokenDigest: String, on connection: PostgresConnection, logger: Logger) async throws -> [String] {
        let rows = try await connection.query(
            "SELECT subject FROM push.subject_keys WHERE service_id = \(serviceId) AND subject LIKE 'device:%' AND subject LIKE \("%:\(tokenDigest)")",
            logger: logger)
        var subjects: [String] = []
        for try await subject in rows.decode(String.self) { subjects.append(subject) }
        return subjects
    }

    /// Destroys the keys of `subjects` in the service (an erasure, in its transaction): every
    /// record sealed under them can no longer be read. Returns the ids of those that existed.
    package static func delete(serviceId: UUID, subjects: [String], on connection: PostgresConnection, logger: Logger) async throws -> [UUID] {
        let rows = try await connection.query(
            "DELETE FROM push.subject_keys WHERE service_id = \(serviceId) AND subject = ANY(\(subjects)) RETURNING subject_id", logger: logger)
        var deleted: [UUID] = []
        for try await id in rows.decode(UUID.self) { deleted.append(id) }
        return deleted
    }
}
