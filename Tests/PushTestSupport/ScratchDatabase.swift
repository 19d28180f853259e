import Foundation
import Testing

/// A database of its own on the stack's PostgreSQL server. For a test whose product code acts on
/// every row of a table, as a deployment's would (the quarantine purge, a key reseal): in the
/// shared database it would also act on the rows of the tests that the other test processes run
/// at the same time. Created and dropped with psql; the caller migrates it.
package struct ScratchDatabase: Sendable {
    package let name: String
    /// `POSTGRES_URL` naming this database.
    package let url: String

    /// Creates `<prefix>_<random>`.
    package static func create(prefix: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> ScratchDatabase {
        let server = try TestStack.postgresURL(sourceLocation: sourceLocation)
        let name = "\(prefix)_\(UUID().uuidString.prefix(8).lowercased())"
        var components = try #require(URLComponents(string: server), sourceLocation: sourceLocation)
        components.path = "/\(name)"
        let database = ScratchDatabase(name: name, url: try #require(components.string, sourceLocation: sourceLocation))
        try #require(psql(server, "CREATE DATABASE \(name)") == 0, "psql could not create database \(name)", sourceLocation: sourceLocation)
        return database
    }

    /// Drops it, whoever still holds a connection to it.
    package func drop() {
        guard let server = TestStack.environment["POSTGRES_URL"] else { return }
        _ = Self.psql(server, "DROP DATABASE IF EXISTS \(name) WITH (FORCE)")
    }

    private static func psql(_ url: String, _ statement: String) -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["psql", url, "-qc", statement]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return -1 }
        process.waitUntilExit()
        return process.terminationStatus
    }
}
