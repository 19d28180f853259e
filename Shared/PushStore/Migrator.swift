import Logging
import PostgresNIO

/// Applies migrations (`SchemaMigrations.all`, module PushSchema) to schema `push`. Idempotent
/// and safe to run from several processes at once (an advisory lock serialises them). Run it as
/// an explicit step (`pushctl migrate`) before the services start; services check the schema
/// version and refuse to run on an older one.
package struct Migrator: Sendable {
    static let lockKey: Int64 = 0x7075_7368  // "push"

    package let client: PostgresClient
    package let logger: Logger

    package init(client: PostgresClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// The versions applied by this call (empty when the schema was already current).
    @discardableResult
    package func migrate(_ migrations: [Migration]) async throws -> [Int] {
        try await client.withConnection { connection in
            try await connection.query("SELECT pg_advisory_lock(\(Self.lockKey))", logger: logger)
            do {
                let applied = try await apply(migrations, on: connection)
                try await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                return applied
            } catch {
                _ = try? await connection.query("SELECT pg_advisory_unlock(\(Self.lockKey))", logger: logger)
                throw error
            }
        }
    }

    private func apply(_ migrations: [Migration], on connection: PostgresConnection) async throws -> [Int] {
        try await connection.query("CREATE SCHEMA IF NOT EXISTS push", logger: logger)
        try await connection.query(
            """
            CREATE TABLE IF NOT EXISTS push.schema_migrations (
                version    integer     PRIMARY KEY,
                name       text        NOT NULL,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """,
            logger: logger
        )
        let current = try await Self.currentVersion(on: connection, logger: logger)
        if let newest = migrations.last?.version, current > newest {
            logger.warning("The database schema is newer than this build knows", metadata: ["schema.version": "\(current)", "known.version": "\(newest)"])
        }
        // Every migration not applied yet, also one numbered below the newest applied: version
        // numbers are handed to parallel work ahead of time, so a lower one may be merged later.
        var done: Set<Int> = []
        for try await version in try await connection.query("SELECT version FROM push.schema_migrations", logger: logger).decode(Int.self) {
            done.insert(version)
        }
        var applied: [Int] = []
        for migration in migrations where !done.contains(migration.version) {
            try await connection.withTransaction(logger: logger) { connection in
                for statement in migration.statements {
                    try await connection.query(PostgresQuery(unsafeSQL: statement), logger: logger)
                }
                try await connection.query(
                    "INSERT INTO push.schema_migrations (version, name) VALUES (\(migration.version), \(migration.name))",
                    logger: logger
                )
            }
            logger.info("Applied migration", metadata: ["migration.version": "\(migration.version)", "migration.name": "\(migration.name)"])
            applied.append(migration.version)
        }
        return applied
    }

    static func currentVersion(on connection: PostgresConnection, logger: Logger) async throws -> Int {
        let rows = try await connection.query("SELECT coalesce(max(version), 0) FROM push.schema_migrations", logger: logger)
        for try await version in rows.decode(Int.self) { return version }
        return 0
    }

    /// The applied schema version, or 0 when migrations never ran.
    package func schemaVersion() async throws -> Int {
        try await client.withConnection { connection in
            let rows = try await connection.query("SELECT to_regclass('push.schema_migrations') IS NOT NULL", logger: logger)
            var exists = false
            for try await value in rows.decode(Bool.self) { exists = value }
            return exists ? try await Self.currentVersion(on: connection, logger: logger) : 0
        }
    }

    /// Fails with a clear message when the schema is older than this build needs: a version of
    /// `Migrations.versions` is not applied.
    package func requireCurrentSchema() async throws {
        let needed = Migrations.versions.last ?? 0
        let version = try await schemaVersion()
        guard version >= needed else {
            throw SchemaVersionError(found: version, needed: needed)
        }
        let missing = try await client.withConnection { connection in
            var done: Set<Int> = []
            for try await version in try await connection.query("SELECT version FROM push.schema_migrations", logger: logger).decode(Int.self) {
                done.insert(version)
            }
            return Migrations.versions.filter { !done.contains($0) }
        }
        guard missing.isEmpty else {
            throw SchemaVersionError(found: version, needed: needed, missing: missing)
        }
    }
}

/// The database schema is older than this build: the deployment must run `pushctl migrate` first.
package struct SchemaVersionError: Error, Sendable, CustomStringConvertible {
    package var found: Int
    package var needed: Int
    /// Versions below `found` that were never applied (merged after a higher one).
    package var missing: [Int] = []
    package var description: String {
        missing.isEmpty
            ? "database schema is at version \(found) but this build needs \(needed): run `pushctl migrate` first"
            : "database schema lacks migrations \(missing.map(String.init).joined(separator: ", ")): run `pushctl migrate` first"
    }
}
