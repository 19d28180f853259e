import Foundation
import Logging
import PostgresNIO
import PushEvents

/// A request naming a template (`"template": {"name", "version"?}`) gets the template's content
/// with its own `content` laid over it, field by field: `title`, `subtitle`, `body`, `ios`,
/// `android` when the request sets them, `variables` and `languages` merged name by name and tag
/// by tag (the request's win). A request's `variants` replace the template's texts, languages
/// and variants (each variant carries its own texts).
/// Resolved once, when the request is checked: the accepted delivery carries the merged content
/// and the version used, so a template changed afterwards does not change it.
enum DeliveryTemplates {
    /// The request with its content resolved, and the template version used (nil when it named
    /// none). An unknown template or version rejects the request.
    static func resolve(_ request: DeliveryRequest, service: PlanningService?, on connection: PostgresConnection, logger: Logger) async throws
        -> (DeliveryRequest, DeliveryRequest.TemplateReference?)
    {
        guard let reference = request.template, let service else { return (request, nil) }
        let rows = try await connection.query(
            """
            SELECT version, content::text FROM push.templates
            WHERE service_id = \(service.serviceId) AND name = \(reference.name) AND (\(reference.version)::bigint IS NULL OR version = \(reference.version))
            ORDER BY version DESC LIMIT 1
            """,
            logger: logger)
        for try await (version, text) in rows.decode((Int, String).self) {
            let stored = try JSONDecoder().decode(DeliveryRequest.Content.self, from: Data(text.utf8))
            var resolved = request
            resolved.content = merged(stored, overriddenBy: request.content)
            return (resolved, .init(name: reference.name, version: version))
        }
        let version = reference.version.map { " version \($0)" } ?? ""
        throw DeliveryRejection(
            requestId: request.requestId, reason: "unknown template '\(reference.name.prefix(64))'\(version) in service '\(service.name)'")
    }

    static func merged(_ template: DeliveryRequest.Content, overriddenBy request: DeliveryRequest.Content) -> DeliveryRequest.Content {
        var content = template
        if let title = request.title { content.title = title }
        if let subtitle = request.subtitle { content.subtitle = subtitle }
        if let body = request.body { content.body = body }
        if let variables = request.variables { content.variables = (template.variables ?? [:]).merging(variables) { _, mine in mine } }
        if let ios = request.ios { content.ios = ios }
        if let android = request.android { content.android = android }
        if let languages = request.languages { content.languages = (template.languages ?? [:]).merging(languages) { _, mine in mine } }
        if let variants = request.variants {
            content.variants = variants
            content.title = nil
            content.subtitle = nil
            content.body = nil
            content.languages = nil
        }
        return content
    }
}
