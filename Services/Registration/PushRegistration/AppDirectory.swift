import Foundation
import Logging
import PostgresNIO
import PushEvents

/// What the registration endpoints need to know about an app.
package struct AppEntry: Sendable, Hashable {
    package var appId: UUID
    /// The app's service: a person's data key is per service.
    package var serviceId: UUID
    package var integrationKey: String
    package var platform: Platform
    /// Kept `additionalParams` names and their types; empty keeps every parameter as text.
    package var parameterTypes: [String: String]

    package var keptParameters: Set<String> { Set(parameterTypes.keys) }
}

/// Integration key -> app, read from `push.apps` and cached. A known key is cached for
/// `ttl`; an unknown key is remembered for a short time so that a client hammering a wrong key
/// does not hammer the database.
package actor AppDirectory {
    private let postgres: PostgresClient
    private let logger: Logger
    private let ttl: Duration
    private let negativeTTL: Duration
    private var cache: [String: (entry: AppEntry?, expires: ContinuousClock.Instant)] = [:]

    package init(postgres: PostgresClient, logger: Logger, ttl: Duration = .seconds(30), negativeTTL: Duration = .seconds(2)) {
        self.postgres = postgres
        self.logger = logger
        self.ttl = ttl
        self.negativeTTL = negativeTTL
    }

    package func app(integrationKey: String) async throws -> AppEntry? {
        let now = ContinuousClock.now
        if let cached = cache[integrationKey], cached.expires > now { return cached.entry }
        let rows = try await postgres.query(
            "SELECT app_id, service_id, platform, subscription_parameters::text FROM push.apps WHERE integration_key = \(integrationKey)",
            logger: logger
        )
        var entry: AppEntry?
        for try await (appId, serviceId, platform, parameters) in rows.decode((UUID, UUID, String, String).self) {
            let declared = (try? JSONDecoder().decode([[String: String]].self, from: Data(parameters.utf8))) ?? []
            let types = Dictionary(declared.compactMap { item in item["name"].map { ($0, item["type"] ?? "string") } }) { first, _ in first }
            entry = Platform(rawValue: platform).map {
                AppEntry(appId: appId, serviceId: serviceId, integrationKey: integrationKey, platform: $0, parameterTypes: types)
            }
        }
        if cache.count > 10_000 { cache.removeAll(keepingCapacity: true) }
        cache[integrationKey] = (entry, now + (entry == nil ? negativeTTL : ttl))
        return entry
    }

    /// Forgets cached entries (after an admin change in this process).
    package func invalidate() {
        cache.removeAll()
    }
}
