import Foundation
import Testing

/// The PostgreSQL server and broker that `scripts/test` starts (`.local/stack.env`). Integration
/// tests fail, never skip, when they are missing: a green run must mean the stack was exercised.
/// Unit tests never read these.
package enum TestStack {
    /// The test process's environment, read once.
    package static let environment = ProcessInfo.processInfo.environment

    /// `KAFKA_BROKERS`: the broker's bootstrap servers.
    package static func kafkaBrokers(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(environment["KAFKA_BROKERS"], "KAFKA_BROKERS is not set: run the suite with scripts/test", sourceLocation: sourceLocation)
    }

    /// `POSTGRES_URL`: the PostgreSQL server.
    package static func postgresURL(sourceLocation: SourceLocation = #_sourceLocation) throws -> String {
        try #require(environment["POSTGRES_URL"], "POSTGRES_URL is not set: run the suite with scripts/test", sourceLocation: sourceLocation)
    }

    /// Fails the test unless both the broker and PostgreSQL are configured.
    package static func require(sourceLocation: SourceLocation = #_sourceLocation) throws {
        _ = try kafkaBrokers(sourceLocation: sourceLocation)
        _ = try postgresURL(sourceLocation: sourceLocation)
    }
}
