import Foundation
import PostgresNIO
import PushEvents

extension CatalogAdmin {
    /// A template version as the admin API shows it.
    package struct TemplateOutput: Codable, Sendable, Equatable {
        package var name: String
        package var version: Int
        package var content: DeliveryRequest.Content
        package var definedAt: Date
    }

    /// The latest version of each of the service's templates, by name.
    package func templates(serviceName: String) async throws -> [TemplateOutput] {
        let serviceId = try await serviceId(named: serviceName)
        return try await templateRows(
            """
            SELECT DISTINCT ON (name) name, version, content::text, defined_at FROM push.templates
            WHERE service_id = \(serviceId) ORDER BY name, version DESC
            """)
    }

    /// One version of a template (the latest when `version` is nil).
    package func template(serviceName: String, name: String, version: Int?) async throws -> TemplateOutput? {
        let serviceId = try await serviceId(named: serviceName)
        return try await templateRows(
            """
            SELECT name, version, content::text, defined_at FROM push.templates
            WHERE service_id = \(serviceId) AND name = \(name) AND (\(version)::bigint IS NULL OR version = \(version))
            ORDER BY version DESC LIMIT 1
            """
        ).first
    }

    /// Defines the next version of the template (1 for a new name) with `TemplateDefined`.
    /// Versions are never changed: a delivery accepted with version n keeps it whatever comes
    /// after.
    package func defineTemplate(serviceName: String, name: String, content: DeliveryRequest.Content) async throws -> TemplateOutput {
        try CatalogValidation.serviceName(name)
        for (field, text) in [("title", content.title), ("subtitle", content.subtitle), ("body", content.body)] {
            if let text, text.utf8.count > 4096 { throw RegistrationError.badRequest("content.\(field) is longer than 4096 bytes") }
        }
        let serviceId = try await serviceId(named: serviceName)
        let next = (try await template(serviceName: serviceName, name: name, version: nil)?.version ?? 0) + 1
        try await publish(key: "template:\(serviceId):\(name)", TemplateDefined(serviceId: serviceId, name: name, version: next, content: content))
        try await awaitProjection(
            "SELECT count(*)::int FROM push.templates WHERE service_id = \(serviceId) AND name = \(name) AND version = \(next)")
        guard let defined = try await template(serviceName: serviceName, name: name, version: next) else {
            throw RegistrationError(status: 503, reason: "the template is stored but not yet visible; read it again")
        }
        return defined
    }

    /// The id of the service with this internal name, or a 404 naming it.
    func serviceId(named name: String) async throws -> UUID {
        guard let service = try await service(named: name) else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
        return service.serviceId
    }

    private func templateRows(_ query: PostgresQuery) async throws -> [TemplateOutput] {
        var result: [TemplateOutput] = []
        for try await (name, version, content, definedAt) in try await postgres.query(query, logger: logger).decode((String, Int, String, Date).self) {
            result.append(
                TemplateOutput(
                    name: name, version: version, content: try JSONDecoder().decode(DeliveryRequest.Content.self, from: Data(content.utf8)),
                    definedAt: definedAt))
        }
        return result
    }
}
