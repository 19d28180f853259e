import Foundation
import Logging
import NIOCore
import PostgresNIO
import PushEvents

/// The per-person data keys of crypto-shredding as stored (`push.subject_keys`, migration 17;
/// docs/architecture.md, "Erasure"): what the registration service, the planner and the senders
/// read and create. Keys are 32 random bytes; callers make their `SymmetricKey` of them.
package enum SubjectKeys {
    /// The subject a device's data is sealed for: its person (`user:<userKey>`) or, without a
    /// user key, the device itself (`device:<appId>:<tokenDigest>`).
    package static func subject(userKey: String, appId: UUID, tokenDigest: String) -> String {
        userKey.isEmpty ? "device:\(appId.uuidString.lowercased()):\(tokenDigest)" : "user:\(userKey)"
    }

    /// The same subject as SQL computes it from a `push.subscriptions` row aliased `s`.
    package static let subjectOfSubscription =
        "CASE WHEN s.user_key = '' THEN 'device:' || s.app_id::text || ':' || s.token_digest ELSE 'user:' || s.user_key END"

    /// The keys of `ids` that still exist (an erased subject's is gone), in one query.
    package static func keys(_ ids: Set<UUID>, on connection: PostgresConnection, logger: Logger) async throws -> [UUID: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        return try await collect(try await connection.query(query(ids), logger: logger))
    }

    /// As `keys(_:on:logger:)`, on a connection of the pool.
    package static func keys(_ ids: Set<UUID>, postgres: PostgresClient, logger: Logger) async throws -> [UUID: [UInt8]] {
        guard !ids.isEmpty else { return [:] }
        return try await collect(try await postgres.query(query(ids), logger: logger))
    }

    private static func query(_ ids: Set<UUID>) -> PostgresQuery {
        "SELECT subject_id, data_key FROM push.subject_keys WHERE subject_id = ANY(\(Array(ids)))"
    }

    private static func collect(_ rows: PostgresRowSequence) async throws -> [UUID: [UInt8]] {
        var keys: [UUID: [UInt8]] = [:]
        for try await (id, bytes) in rows.decode((UUID, ByteBuffer).self) { keys[id] = Array(bytes.readableBytesView) }
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
        serviceId: UUID, subjects: [String], on connection: PostgresConnection, logger: Logger
    ) async throws -> [String: (id: UUID, key: [UInt8])] {
        guard !subjects.isEmpty else { return [:] }
        let fresh = subjects.map { _ in TokenDigest.hex(freshKey()) }
        let ids = subjects.map { _ in RandomUUID.make() }
        let services = subjects.map { _ in serviceId }
        // In an explicit transaction: its COMMIT is answered before the keys are read and used.
        try await connection.withTransaction(logger: logger) { connection in
            try await connection.query(
                """
                INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key)
                SELECT i, s, subject, decode(k, 'hex') FROM unnest(\(ids)::uuid[], \(services)::uuid[], \(subjects)::text[], \(fresh)::text[]) AS w(i, s, subject, k)
                ON CONFLICT (service_id, subject) DO NOTHING
                """,
                logger: logger)
        }
        let rows = try await connection.query(
            "SELECT subject, subject_id, data_key FROM push.subject_keys WHERE service_id = \(serviceId) AND subject = ANY(\(subjects))", logger: logger)
        var keys: [String: (id: UUID, key: [UInt8])] = [:]
        for try await (subject, id, bytes) in rows.decode((String, UUID, ByteBuffer).self) { keys[subject] = (id, Array(bytes.readableBytesView)) }
        return keys
    }

    /// The keys of `subjects` (service id and subject, of any services) that exist, in one
    /// statement outside any transaction: a row a plain statement reads is committed, so a key
    /// read here may be used at once.
    package static func read(
        _ subjects: [(serviceId: UUID, subject: String)], postgres: PostgresClient, logger: Logger
    ) async throws -> [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] {
        guard !subjects.isEmpty else { return [] }
        let rows = try await postgres.query(
            """
            SELECT k.service_id, k.subject, k.subject_id, k.data_key
            FROM push.subject_keys k JOIN unnest(\(subjects.map(\.serviceId))::uuid[], \(subjects.map(\.subject))::text[]) AS w(service_id, subject)
              ON k.service_id = w.service_id AND k.subject = w.subject
            """,
            logger: logger)
        var keys: [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] = []
        for try await (serviceId, subject, id, bytes) in rows.decode((UUID, String, UUID, ByteBuffer).self) {
            keys.append((serviceId, subject, id, Array(bytes.readableBytesView)))
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
        _ subjects: [(serviceId: UUID, subject: String)], on connection: PostgresConnection, logger: Logger
    ) async throws -> [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] {
        guard !subjects.isEmpty else { return [] }
        let fresh = subjects.map { _ in TokenDigest.hex(freshKey()) }
        let rows = try await connection.query(
            """
            WITH wanted AS (
                SELECT * FROM unnest(\(subjects.map(\.serviceId))::uuid[], \(subjects.map(\.subject))::text[],
                                     \(subjects.map { _ in RandomUUID.make() })::uuid[], \(fresh)::text[]) AS w(service_id, subject, subject_id, data_key)),
            created AS (
                INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key)
                SELECT subject_id, service_id, subject, decode(data_key, 'hex') FROM wanted
                ON CONFLICT (service_id, subject) DO NOTHING
                RETURNING service_id, subject, subject_id, data_key)
            SELECT service_id, subject, subject_id, data_key FROM created
            UNION ALL
            SELECT k.service_id, k.subject, k.subject_id, k.data_key
            FROM push.subject_keys k JOIN wanted w ON k.service_id = w.service_id AND k.subject = w.subject
            """,
            logger: logger)
        var keys: [(serviceId: UUID, subject: String, id: UUID, key: [UInt8])] = []
        for try await (serviceId, subject, id, bytes) in rows.decode((UUID, String, UUID, ByteBuffer).self) {
            keys.append((serviceId, subject, id, Array(bytes.readableBytesView)))
        }
        return keys
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
