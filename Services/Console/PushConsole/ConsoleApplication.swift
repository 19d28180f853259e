import Hummingbird
import HummingbirdCore
import Logging
import PostgresNIO
import PushRuntime
import ServiceLifecycle

/// Builds the console's parts; the executable and the tests call the same function.
package enum ConsoleApplication {
    /// The console's HTTP server. Sessions are signed with a key derived from the admin token
    /// (`ConsoleSessions`): replicas given the same token share sessions without shared state.
    /// - Parameter adminToken: the admin token itself: people sign in with it, and the console
    ///   calls the admin APIs with it.
    package static func build(
        adminToken: String, settings: ConsoleSettings, postgres: PostgresClient, server: HTTPServerBuilder, logger: Logger
    ) throws(ConfigurationError)
        -> [any Service]
    {
        let token = try AdminToken(adminToken)
        // Parses every page template now, once, rather than on the first request.
        _ = ConsoleTemplates.library
        let router = Router(context: PeerRequestContext.self)
        ConsoleEndpoints(
            token: token,
            admin: ConsoleAdminClient(
                deliveriesURL: settings.deliveriesAPIURL, registrationURL: settings.registrationAPIURL, token: adminToken, logger: logger),
            sessions: ConsoleSessions(key: token.derivedKey(purpose: "push console sessions v1"), lifetime: .seconds(settings.sessionMinutes * 60)),
            reports: ConsoleReports(postgres: postgres, logger: logger), settings: settings, logger: logger
        ).addRoutes(to: router)
        return [
            Application(
                router: router, server: server, configuration: .init(address: .hostname(settings.host, port: settings.port), serverName: nil), logger: logger)
        ]
    }
}
