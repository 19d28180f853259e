import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushRuntime
import PushStore

/// Keeps `push.services` and `push.apps` from `push.catalog` (one partition: admin changes
/// apply in the order they were made).
///
/// `AppDeleted` deletes the app's row, deletes its sealed credentials from
/// `push.app_credentials` and records the app in `push.deleted_apps` (the senders fail its queued
/// messages as `app-deleted`); a deletion is final: an `AppDefined` or `AppCredentialsSet` of a
/// deleted app that comes later (an update racing the delete) is ignored, and credentials stored
/// for it meanwhile are deleted. All of it is a function of the topic, so a replay gets there too.
///
/// A definition that would take a service name or an integration key another service or app
/// holds (two admin instances racing) is not applied, so the projection never stalls on a
/// unique constraint; the admin API checks uniqueness before it publishes.
package struct CatalogProjection: EnvelopeProjection {
    package enum Event: Sendable {
        case serviceDefined(ServiceDefined, Date)
        case serviceDeleted(ServiceDeleted)
        case appDefined(AppDefined, Date)
        case appDeleted(AppDeleted, Date)
        case credentialsSet(AppCredentialsSet, Date)
        case templateDefined(TemplateDefined, Date)
        case segmentDefined(SegmentDefined, Date)
        case frequencyCapSet(ServiceFrequencyCapSet, Date)
        case operatorDefined(OperatorDefined, Date)
        case operatorTokenIssued(OperatorTokenIssued, Date)
        case operatorTokenRevoked(OperatorTokenRevoked, Date)
        case operatorPasswordSet(OperatorPasswordSet, Date)
    }

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<Event>

    package init(name: String = "push-catalog-projection", topic: String) {
        self.name = name
        self.topics = [topic]
        var decoder = EventDecoder<Event>()
        decoder.register(ServiceDefined.self) { event, metadata in .serviceDefined(event, metadata.occurredAt) }
        decoder.register(ServiceDeleted.self) { event, _ in .serviceDeleted(event) }
        decoder.register(AppDefined.self) { event, metadata in .appDefined(event, metadata.occurredAt) }
        decoder.register(AppDeleted.self) { event, metadata in .appDeleted(event, metadata.occurredAt) }
        decoder.register(AppCredentialsSet.self) { event, metadata in .credentialsSet(event, metadata.occurredAt) }
        decoder.register(TemplateDefined.self) { event, metadata in .templateDefined(event, metadata.occurredAt) }
        decoder.register(SegmentDefined.self) { event, metadata in .segmentDefined(event, metadata.occurredAt) }
        decoder.register(ServiceFrequencyCapSet.self) { event, metadata in .frequencyCapSet(event, metadata.occurredAt) }
        decoder.register(OperatorDefined.self) { event, metadata in .operatorDefined(event, metadata.occurredAt) }
        decoder.register(OperatorTokenIssued.self) { event, metadata in .operatorTokenIssued(event, metadata.occurredAt) }
        decoder.register(OperatorTokenRevoked.self) { event, metadata in .operatorTokenRevoked(event, metadata.occurredAt) }
        decoder.register(OperatorPasswordSet.self) { event, metadata in .operatorPasswordSet(event, metadata.occurredAt) }
        self.decoder = decoder
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        if !events.isEmpty {
            // Delivered on commit: `CatalogAdmin` waits for it to read its own writes.
            try await ProjectionWait.catalog.notify(on: connection, logger: logger)
        }
        for projected in events {
            switch projected.event {
            case .serviceDefined(let service, let at):
                try await connection.query(
                    """
                    INSERT INTO push.services AS s (service_id, name, label, created_at, updated_at)
                    SELECT \(service.serviceId), \(service.name), \(service.label), \(at), \(at)
                    WHERE NOT EXISTS (SELECT 1 FROM push.services WHERE name = \(service.name) AND service_id <> \(service.serviceId))
                    ON CONFLICT (service_id) DO UPDATE SET name = excluded.name, label = excluded.label, updated_at = excluded.updated_at
                    """,
                    logger: logger
                )
            case .frequencyCapSet(let set, let at):
                try await connection.query(
                    """
                    UPDATE push.services SET frequency_cap_messages = \(set.cap?.messages), frequency_cap_period_hours = \(set.cap?.periodHours),
                                             updated_at = greatest(updated_at, \(at))
                    WHERE service_id = \(set.serviceId)
                    """,
                    logger: logger
                )
            case .operatorDefined(let event, let at):
                try await OperatorDirectory.apply(event, at: at, on: connection, logger: logger)
            case .operatorTokenIssued(let event, let at):
                try await OperatorDirectory.apply(event, at: at, on: connection, logger: logger)
            case .operatorTokenRevoked(let event, let at):
                try await OperatorDirectory.apply(event, at: at, on: connection, logger: logger)
            case .operatorPasswordSet(let event, let at):
                try await OperatorDirectory.apply(event, at: at, on: connection, logger: logger)
            case .serviceDeleted(let deleted):
                try await connection.query("DELETE FROM push.services WHERE service_id = \(deleted.serviceId)", logger: logger)
                try await connection.query("DELETE FROM push.templates WHERE service_id = \(deleted.serviceId)", logger: logger)
                try await connection.query("DELETE FROM push.segments WHERE service_id = \(deleted.serviceId)", logger: logger)
            case .templateDefined(let template, let at):
                // A version is written once: two admin instances racing on the next version, the
                // first wins (the admin API reads back which one holds it).
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                let content = String(decoding: try encoder.encode(template.content), as: UTF8.self)
                try await connection.query(
                    """
                    INSERT INTO push.templates (service_id, name, version, content, defined_at)
                    SELECT \(template.serviceId), \(template.name), \(template.version), \(content)::jsonb, \(at)
                    WHERE EXISTS (SELECT 1 FROM push.services WHERE service_id = \(template.serviceId))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
            case .segmentDefined(let segment, let at):
                // Written once per version, as templates are.
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                let filter = String(decoding: try encoder.encode(segment.filter), as: UTF8.self)
                try await connection.query(
                    """
                    INSERT INTO push.segments (service_id, name, version, filter, description, defined_at)
                    SELECT \(segment.serviceId), \(segment.name), \(segment.version), \(filter)::jsonb, \(segment.description), \(at)
                    WHERE EXISTS (SELECT 1 FROM push.services WHERE service_id = \(segment.serviceId))
                    ON CONFLICT DO NOTHING
                    """,
                    logger: logger
                )
            case .appDefined(let app, let at):
                let encoder = JSONEncoder()
                encoder.outputFormatting = .sortedKeys
                let variables = String(decoding: try encoder.encode(app.variables), as: UTF8.self)
                let sounds = String(decoding: try encoder.encode(app.sounds), as: UTF8.self)
                let parameters = String(decoding: try encoder.encode(app.subscriptionParameters), as: UTF8.self)
                try await connection.query(
                    """
                    INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id,
                                           fcm_project_id, variables, sounds, subscription_parameters, created_at, updated_at)
                    SELECT \(app.appId), \(app.serviceId), \(app.integrationKey), \(app.platform.rawValue), \(app.environment), \(app.label),
                           \(app.bundleId), \(app.fcmProjectId), \(variables)::jsonb, \(sounds)::jsonb, \(parameters)::jsonb, \(at), \(at)
                    WHERE NOT EXISTS (SELECT 1 FROM push.apps WHERE integration_key = \(app.integrationKey) AND app_id <> \(app.appId))
                      AND NOT EXISTS (SELECT 1 FROM push.deleted_apps WHERE app_id = \(app.appId))
                    ON CONFLICT (app_id) DO UPDATE SET
                        service_id = excluded.service_id, integration_key = excluded.integration_key, platform = excluded.platform,
                        environment = excluded.environment, label = excluded.label, bundle_id = excluded.bundle_id,
                        fcm_project_id = excluded.fcm_project_id, variables = excluded.variables, sounds = excluded.sounds,
                        subscription_parameters = excluded.subscription_parameters, updated_at = excluded.updated_at
                    """,
                    logger: logger
                )
            case .credentialsSet(let credentials, let at):
                try await connection.query(
                    """
                    UPDATE push.apps SET credential_id = \(credentials.credentialId), credential_kind = \(credentials.kind),
                        credential_fingerprint = \(credentials.fingerprint), credential_updated_at = \(at)
                    WHERE app_id = \(credentials.appId)
                    """,
                    logger: logger
                )
                // Credentials stored for an app deleted meanwhile (a rotation racing the delete).
                try await CredentialStore.deleteIfAppDeleted(appId: credentials.appId, on: connection, logger: logger)
            case .appDeleted(let deleted, let at):
                try await connection.query("DELETE FROM push.apps WHERE app_id = \(deleted.appId)", logger: logger)
                try await CredentialStore.deleteAll(appId: deleted.appId, on: connection, logger: logger)
                try await connection.query(
                    "INSERT INTO push.deleted_apps (app_id, deleted_at) VALUES (\(deleted.appId), \(at)) ON CONFLICT (app_id) DO NOTHING",
                    logger: logger
                )
            }
        }
    }
}
