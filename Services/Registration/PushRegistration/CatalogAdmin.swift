import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushRuntime
import PushStore

/// The command side of the app catalog: validates a change against the current catalog
/// (`push.services`, `push.apps`), publishes its event on `push.catalog`, and waits (up to 5 s)
/// until the catalog projection shows it, so that a client reads its own writes.
///
/// Commands are serialised in this process; uniqueness of service names and integration keys is
/// checked here and enforced again by the projection.
package actor CatalogAdmin {
    let producer: KafkaProducer
    let topic: String
    let postgres: PostgresClient
    let directory: AppDirectory
    let credentials: CredentialStore?
    let logger: Logger

    package init(producer: KafkaProducer, topic: String, postgres: PostgresClient, directory: AppDirectory, credentials: CredentialStore?, logger: Logger) {
        self.producer = producer
        self.topic = topic
        self.postgres = postgres
        self.directory = directory
        self.credentials = credentials
        self.logger = logger
    }

    // MARK: credentials

    private func credentialStore() throws -> CredentialStore {
        guard let credentials else {
            throw RegistrationError(status: 503, reason: "credential storage disabled: set PUSH_CREDENTIALS_KEY")
        }
        return credentials
    }

    package func credentials(appId: UUID) async throws -> [CredentialOutput] {
        let store = try credentialStore()
        guard try await app(id: appId) != nil else { throw RegistrationError(status: 404, reason: "no app \(appId)") }
        return try await store.list(appId: appId).map {
            CredentialOutput(
                credentialId: $0.credentialId, appId: appId, kind: $0.kind, fingerprint: $0.fingerprint, details: $0.details, createdAt: $0.createdAt)
        }
    }

    /// Stores new credentials (sealed) and makes them the app's active ones; the previous ones
    /// stay stored, so a rotation has no gap.
    package func setCredentials(appId: UUID, _ input: CredentialInput) async throws -> CredentialOutput {
        let store = try credentialStore()
        guard let app = try await app(id: appId) else { throw RegistrationError(status: 404, reason: "no app \(appId)") }
        let validated = try ValidatedCredential.validate(input, platform: app.platform)
        let credentialId = UUID()
        try await store.store(validated.secret, fingerprint: validated.fingerprint, details: validated.details, appId: appId, credentialId: credentialId)
        let event = AppCredentialsSet(
            appId: appId, credentialId: credentialId, kind: validated.kind, fingerprint: validated.fingerprint, details: validated.details)
        let occurredAt = try await publish(key: "app:\(appId)", event)
        try await awaitProjection("SELECT count(*)::int FROM push.apps WHERE app_id = \(appId) AND credential_id = \(credentialId)")
        return CredentialOutput(
            credentialId: credentialId, appId: appId, kind: validated.kind, fingerprint: validated.fingerprint, details: validated.details,
            createdAt: occurredAt)
    }

    // MARK: queries

    package func services() async throws -> [ServiceOutput] {
        try await serviceRows("SELECT service_id, name, label FROM push.services ORDER BY name")
    }

    package func service(named name: String) async throws -> ServiceOutput? {
        try await serviceRows("SELECT service_id, name, label FROM push.services WHERE name = \(name)").first
    }

    private func serviceRows(_ query: PostgresQuery) async throws -> [ServiceOutput] {
        var services: [ServiceOutput] = []
        for try await (id, name, label) in try await postgres.query(query, logger: logger).decode((UUID, String, String).self) {
            services.append(ServiceOutput(serviceId: id, name: name, label: label))
        }
        return services
    }

    package func apps(serviceName: String? = nil) async throws -> [AppOutput] {
        try await appRows(serviceName: serviceName, appId: nil)
    }

    package func app(id: UUID) async throws -> AppOutput? {
        try await appRows(serviceName: nil, appId: id).first
    }

    private func appRows(serviceName: String?, appId: UUID?) async throws -> [AppOutput] {
        let query: PostgresQuery = """
            SELECT json_build_object('appId', a.app_id, 'serviceId', a.service_id, 'serviceName', s.name, 'platform', a.platform,
                'integrationKey', a.integration_key, 'label', a.label, 'environment', a.environment, 'bundleId', a.bundle_id,
                'fcmProjectId', a.fcm_project_id, 'variables', a.variables, 'sounds', a.sounds,
                'subscriptionParameters', a.subscription_parameters)::text
            FROM push.apps a JOIN push.services s ON s.service_id = a.service_id
            WHERE (\(serviceName)::text IS NULL OR s.name = \(serviceName)) AND (\(appId)::uuid IS NULL OR a.app_id = \(appId))
            ORDER BY s.name, a.label, a.app_id
            """
        var apps: [AppOutput] = []
        let decoder = JSONDecoder()
        for try await json in try await postgres.query(query, logger: logger).decode(String.self) {
            apps.append(try decoder.decode(AppOutput.self, from: Data(json.utf8)))
        }
        return apps
    }

    // MARK: commands

    package func createService(_ input: ServiceInput) async throws -> ServiceOutput {
        guard let name = input.name else { throw RegistrationError.badRequest("name is required") }
        try CatalogValidation.serviceName(name)
        try CatalogValidation.label(input.label)
        if try await service(named: name) != nil { throw RegistrationError(status: 409, reason: "a service named \(name) exists") }
        let output = ServiceOutput(serviceId: UUID(), name: name, label: input.label)
        try await publish(key: "service:\(output.serviceId)", ServiceDefined(serviceId: output.serviceId, name: name, label: input.label))
        try await awaitProjection("SELECT count(*)::int FROM push.services WHERE service_id = \(output.serviceId) AND label = \(input.label)")
        return output
    }

    package func updateService(named name: String, _ input: ServiceInput) async throws -> ServiceOutput {
        try CatalogValidation.label(input.label)
        guard var service = try await service(named: name) else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
        service.label = input.label
        try await publish(key: "service:\(service.serviceId)", ServiceDefined(serviceId: service.serviceId, name: name, label: input.label))
        try await awaitProjection("SELECT count(*)::int FROM push.services WHERE service_id = \(service.serviceId) AND label = \(input.label)")
        return service
    }

    package func deleteService(named name: String) async throws {
        guard let service = try await service(named: name) else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
        guard try await apps(serviceName: name).isEmpty else {
            throw RegistrationError(status: 409, reason: "service \(name) still has apps: delete them first")
        }
        try await publish(key: "service:\(service.serviceId)", ServiceDeleted(serviceId: service.serviceId))
        try await awaitProjection("SELECT (count(*) = 0)::int FROM push.services WHERE service_id = \(service.serviceId)")
    }

    package func createApp(serviceName: String, _ input: AppInput) async throws -> AppOutput {
        guard let service = try await service(named: serviceName) else { throw RegistrationError(status: 404, reason: "no service named \(serviceName)") }
        let app = try CatalogValidation.app(input, appId: UUID(), serviceId: service.serviceId)
        try await requireUniqueKey(app.integrationKey, except: nil)
        return try await define(app, serviceName: service.name)
    }

    package func updateApp(id: UUID, _ input: AppInput) async throws -> AppOutput {
        guard let current = try await app(id: id) else { throw RegistrationError(status: 404, reason: "no app \(id)") }
        guard input.platform == current.platform.rawValue else { throw RegistrationError.badRequest("platform cannot change: create another app") }
        var input = input
        input.integrationKey = input.integrationKey ?? current.integrationKey
        let app = try CatalogValidation.app(input, appId: id, serviceId: current.serviceId)
        try await requireUniqueKey(app.integrationKey, except: id)
        return try await define(app, serviceName: current.serviceName)
    }

    package func deleteApp(id: UUID) async throws {
        guard try await app(id: id) != nil else { throw RegistrationError(status: 404, reason: "no app \(id)") }
        try await publish(key: "app:\(id)", AppDeleted(appId: id))
        try await awaitProjection("SELECT (count(*) = 0)::int FROM push.apps WHERE app_id = \(id)")
        await directory.invalidate()
    }

    private func requireUniqueKey(_ key: String, except appId: UUID?) async throws {
        let rows = try await postgres.query("SELECT app_id FROM push.apps WHERE integration_key = \(key)", logger: logger)
        for try await owner in rows.decode(UUID.self) where owner != appId {
            throw RegistrationError(status: 409, reason: "integration key is already used by another app")
        }
    }

    private func define(_ app: AppDefined, serviceName: String) async throws -> AppOutput {
        let occurredAt = try await publish(key: "app:\(app.appId)", app)
        try await awaitProjection("SELECT count(*)::int FROM push.apps WHERE app_id = \(app.appId) AND updated_at >= \(occurredAt)")
        await directory.invalidate()
        return AppOutput(
            appId: app.appId, serviceId: app.serviceId, serviceName: serviceName, platform: app.platform,
            integrationKey: app.integrationKey, label: app.label, environment: app.environment, bundleId: app.bundleId,
            fcmProjectId: app.fcmProjectId, variables: app.variables, sounds: app.sounds, subscriptionParameters: app.subscriptionParameters
        )
    }

    /// Publishes and returns the event's time (milliseconds, as stored).
    @discardableResult
    func publish<Payload: PushEvent>(key: String, _ payload: Payload) async throws -> Date {
        let occurredAt = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 * 1000).rounded(.down) / 1000)
        let envelope = EventEnvelope(key: key, payload: payload, occurredAt: occurredAt)
        do {
            try await producer.send(KafkaProducerRecord(topic: topic, event: envelope))
        } catch {
            logger.error("Catalog change not stored by the broker", metadata: ["error": "\(error)"])
            throw RegistrationError(status: 503, reason: "the change could not be stored; retry later")
        }
        logger.info("Catalog changed", metadata: ["event": "\(Payload.eventType)", "key": "\(key)"])
        return occurredAt
    }

    /// Waits until `query` returns 1 (the projection shows the change), at most 5 s
    /// (`ProjectionWait.catalog`: checked once, then after each transaction of the catalog
    /// projection, whichever registration instance holds `push.catalog`).
    func awaitProjection(_ query: PostgresQuery) async throws {
        let logger = self.logger
        let shown = try await ProjectionWait.catalog.until(timeout: .seconds(5), postgres: postgres, logger: logger) { connection in
            try await Self.shows(query, on: connection, logger: logger)
        }
        if !shown {
            logger.warning("Catalog projection is behind: the change is stored but not yet visible")
        }
    }

    private static func shows(_ query: PostgresQuery, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        for try await value in try await connection.query(query, logger: logger).decode(Int.self) where value >= 1 { return true }
        return false
    }
}
