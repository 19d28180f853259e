import Foundation
import Logging
import PostgresNIO
import PushEvents

/// What the planner needs to know about one app, read from the `push.apps` projection.
package struct PlanningApp: Sendable, Hashable {
    package var appId: UUID
    package var integrationKey: String
    package var platform: Platform
    package var environment: String
    package var bundleId: String?
    package var fcmProjectId: String?
    package var variables: Set<String>
    /// The sound file names the (iOS) app declares; `default` is always allowed besides.
    package var sounds: Set<String>
    package var credential: CredentialReference?
    /// The subscription parameters the app declares, by name: `string`, `integer`, `decimal`,
    /// `boolean` or `date` (how a targeting condition compares them).
    package var parameterTypes: [String: String]

    package init(
        appId: UUID, integrationKey: String, platform: Platform, environment: String, bundleId: String?,
        fcmProjectId: String?, variables: Set<String>, sounds: Set<String> = [], credential: CredentialReference?,
        parameterTypes: [String: String] = [:]
    ) {
        self.appId = appId
        self.integrationKey = integrationKey
        self.platform = platform
        self.environment = environment
        self.bundleId = bundleId
        self.fcmProjectId = fcmProjectId
        self.variables = variables
        self.sounds = sounds
        self.credential = credential
        self.parameterTypes = parameterTypes
    }

    package var reference: DeliveryApp { DeliveryApp(appId: appId, integrationKey: integrationKey, platform: platform) }
}

/// A service and its apps as the catalog projection holds them.
package struct PlanningService: Sendable, Hashable {
    package var serviceId: UUID
    package var name: String
    package var apps: [PlanningApp]
}

extension ServiceCatalog {
    /// The service's frequency cap (`push.services.frequency_cap_*`, `ServiceFrequencyCapSet`);
    /// nil when it has none.
    package static func frequencyCap(serviceId: UUID, on connection: PostgresConnection, logger: Logger) async throws -> FrequencyCap? {
        let rows = try await connection.query(
            "SELECT frequency_cap_messages, frequency_cap_period_hours FROM push.services WHERE service_id = \(serviceId)", logger: logger)
        for try await (messages, hours) in rows.decode((Int?, Int?).self) {
            guard let messages, let hours else { return nil }
            return FrequencyCap(messages: messages, periodHours: hours)
        }
        return nil
    }
}

/// Reads services and apps from PostgreSQL (the registration service's catalog projection).
package enum ServiceCatalog {
    /// The service with this internal name and all its apps, or nil.
    package static func service(named name: String, on connection: PostgresConnection, logger: Logger) async throws -> PlanningService? {
        let services = try await connection.query("SELECT service_id, name FROM push.services WHERE name = \(name)", logger: logger)
        var found: (UUID, String)?
        for try await row in services.decode((UUID, String).self) { found = row }
        guard let (serviceId, serviceName) = found else { return nil }
        return PlanningService(serviceId: serviceId, name: serviceName, apps: try await apps(where: .service(serviceId), on: connection, logger: logger))
    }

    /// These apps (by id), whatever their service.
    package static func apps(ids: [UUID], on connection: PostgresConnection, logger: Logger) async throws -> [PlanningApp] {
        try await apps(where: .ids(ids), on: connection, logger: logger)
    }

    private enum Filter {
        case service(UUID)
        case ids([UUID])
    }

    private static func apps(where filter: Filter, on connection: PostgresConnection, logger: Logger) async throws -> [PlanningApp] {
        let rows: PostgresRowSequence
        switch filter {
        case .service(let serviceId):
            rows = try await connection.query(
                """
                SELECT app_id, integration_key, platform, environment, bundle_id, fcm_project_id, variables::text, sounds::text,
                       credential_id, credential_kind, credential_fingerprint, subscription_parameters::text
                FROM push.apps WHERE service_id = \(serviceId) ORDER BY app_id
                """,
                logger: logger
            )
        case .ids(let ids):
            rows = try await connection.query(
                """
                SELECT app_id, integration_key, platform, environment, bundle_id, fcm_project_id, variables::text, sounds::text,
                       credential_id, credential_kind, credential_fingerprint, subscription_parameters::text
                FROM push.apps WHERE app_id = ANY(\(ids)) ORDER BY app_id
                """,
                logger: logger
            )
        }
        var apps: [PlanningApp] = []
        /// An entry of `push.apps.sounds` (`{name, label}`).
        struct DeclaredSound: Decodable { var name: String }
        /// An entry of `push.apps.subscription_parameters` (`{name, type}`).
        struct DeclaredParameter: Decodable {
            var name: String
            var type: String?
        }
        for try await (appId, key, platform, environment, bundleId, project, variables, sounds, credentialId, kind, fingerprint, parameters)
            in rows.decode((UUID, String, String, String, String?, String?, String, String, UUID?, String?, String?, String).self)
        {
            guard let platform = Platform(rawValue: platform) else { continue }  // push.apps allows only the two
            let declared = (try? JSONDecoder().decode([String].self, from: Data(variables.utf8))) ?? []
            let soundNames = (try? JSONDecoder().decode([DeclaredSound].self, from: Data(sounds.utf8)))?.map(\.name) ?? []
            let declaredParameters = (try? JSONDecoder().decode([DeclaredParameter].self, from: Data(parameters.utf8))) ?? []
            var credential: CredentialReference?
            if let credentialId, let kind, let fingerprint {
                credential = CredentialReference(credentialId: credentialId, kind: kind, fingerprint: fingerprint)
            }
            apps.append(
                PlanningApp(
                    appId: appId, integrationKey: key, platform: platform, environment: environment, bundleId: bundleId,
                    fcmProjectId: project, variables: Set(declared), sounds: Set(soundNames), credential: credential,
                    parameterTypes: Dictionary(declaredParameters.map { ($0.name, $0.type ?? "string") }) { first, _ in first }
                ))
        }
        return apps
    }
}
