import Foundation
import NIOSSL
import PostgresNIO

/// Where the projections live: a `postgres://user:password@host:port/database?sslmode=…` URL.
///
/// `sslmode` is `disable` (default), `prefer` or `require` (certificate verified against the
/// system trust store). `description` never shows the password.
package struct PostgresSettings: Sendable, CustomStringConvertible {
    package var host: String
    package var port: Int
    package var username: String
    package var password: String?
    package var database: String
    package var tlsMode: String
    /// Connections in the pool at most. Default 10.
    package var maximumConnections: Int

    package init(url: String, maximumConnections: Int = 10) throws(ConfigurationError) {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
            let host = components.host, !host.isEmpty
        else {
            throw ConfigurationError("POSTGRES_URL must look like postgres://user:password@host:5432/database")
        }
        self.host = host
        self.port = components.port ?? 5432
        self.username = components.user ?? "postgres"
        self.password = components.password?.removingPercentEncoding
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        self.database = path.isEmpty ? self.username : path
        self.tlsMode = components.queryItems?.first { $0.name == "sslmode" }?.value ?? "disable"
        guard ["disable", "prefer", "require"].contains(tlsMode) else {
            throw ConfigurationError("POSTGRES_URL sslmode must be disable, prefer or require, not \(tlsMode)")
        }
        self.maximumConnections = maximumConnections
    }

    package var description: String {
        "postgres://\(username)\(password == nil ? "" : ":***")@\(host):\(port)/\(database)?sslmode=\(tlsMode)"
    }

    package var clientConfiguration: PostgresClient.Configuration {
        let tls: PostgresClient.Configuration.TLS
        switch tlsMode {
        case "require": tls = .require(.makeClientConfiguration())
        case "prefer": tls = .prefer(.makeClientConfiguration())
        default: tls = .disable
        }
        var configuration = PostgresClient.Configuration(host: host, port: port, username: username, password: password, database: database, tls: tls)
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(5)
        return configuration
    }
}
