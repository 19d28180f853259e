import Foundation
import Logging
import PostgresNIO
import PushEvents

/// A request naming a segment (`"audience": {"segment": {"name", "version"?}}`) gets the segment's
/// conditions as its `audience.filter`, with the version used written into the reference; the
/// filter is then checked as any request's (docs/delivery-requests.md "Segments"). Resolved once,
/// when the request is checked: a segment changed afterwards does not change the delivery.
enum DeliverySegments {
    static func resolve(_ request: DeliveryRequest, service: PlanningService?, on connection: PostgresConnection, logger: Logger) async throws
        -> DeliveryRequest
    {
        guard let reference = request.audience.segment, let service else { return request }
        guard request.audience.filter == nil else {
            throw DeliveryRejection(requestId: request.requestId, reason: "audience must have exactly one of all, userKeys, where, filter, segment")
        }
        let rows = try await connection.query(
            """
            SELECT version, filter::text FROM push.segments
            WHERE service_id = \(service.serviceId) AND name = \(reference.name) AND (\(reference.version)::bigint IS NULL OR version = \(reference.version))
            ORDER BY version DESC LIMIT 1
            """,
            logger: logger)
        for try await (version, text) in rows.decode((Int, String).self) {
            var resolved = request
            resolved.audience.filter = try JSONDecoder().decode(AudienceFilter.self, from: Data(text.utf8))
            resolved.audience.segment = .init(name: reference.name, version: version)
            return resolved
        }
        let version = reference.version.map { " version \($0)" } ?? ""
        throw DeliveryRejection(
            requestId: request.requestId, reason: "unknown segment '\(reference.name.prefix(64))'\(version) in service '\(service.name)'")
    }
}
