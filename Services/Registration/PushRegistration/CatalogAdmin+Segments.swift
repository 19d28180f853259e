import Foundation
import PostgresNIO
import PushEvents

extension CatalogAdmin {
    /// A segment version as the admin API shows it.
    package struct SegmentOutput: Codable, Sendable, Equatable {
        package var name: String
        package var version: Int
        package var filter: AudienceFilter
        package var description: String?
        package var definedAt: Date
    }

    /// What `PUT /admin/v1/services/{name}/segments/{segment}` takes.
    package struct SegmentInput: Codable, Sendable {
        package var filter: AudienceFilter
        package var description: String?
    }

    /// The latest version of each of the service's segments, by name.
    package func segments(serviceName: String) async throws -> [SegmentOutput] {
        let serviceId = try await serviceId(named: serviceName)
        return try await segmentRows(
            """
            SELECT DISTINCT ON (name) name, version, filter::text, description, defined_at FROM push.segments
            WHERE service_id = \(serviceId) ORDER BY name, version DESC
            """)
    }

    /// One version of a segment (the latest when `version` is nil).
    package func segment(serviceName: String, name: String, version: Int?) async throws -> SegmentOutput? {
        let serviceId = try await serviceId(named: serviceName)
        return try await segmentRows(
            """
            SELECT name, version, filter::text, description, defined_at FROM push.segments
            WHERE service_id = \(serviceId) AND name = \(name) AND (\(version)::bigint IS NULL OR version = \(version))
            ORDER BY version DESC LIMIT 1
            """
        ).first
    }

    /// Defines the next version of the segment (1 for a new name) with `SegmentDefined`. Its
    /// conditions are checked against the targeted apps' parameter types when a request uses it
    /// (the planner's rules); here only their shape, which decoding the input already did.
    package func defineSegment(serviceName: String, name: String, _ input: SegmentInput) async throws -> SegmentOutput {
        try CatalogValidation.serviceName(name)
        if let description = input.description, description.utf8.count > 1_000 {
            throw RegistrationError.badRequest("description is longer than 1000 bytes")
        }
        let serviceId = try await serviceId(named: serviceName)
        let next = (try await segment(serviceName: serviceName, name: name, version: nil)?.version ?? 0) + 1
        try await publish(
            key: "segment:\(serviceId):\(name)",
            SegmentDefined(serviceId: serviceId, name: name, version: next, filter: input.filter, description: input.description))
        try await awaitProjection("SELECT count(*)::int FROM push.segments WHERE service_id = \(serviceId) AND name = \(name) AND version = \(next)")
        guard let defined = try await segment(serviceName: serviceName, name: name, version: next) else {
            throw RegistrationError(status: 503, reason: "the segment is stored but not yet visible; read it again")
        }
        return defined
    }

    private func segmentRows(_ query: PostgresQuery) async throws -> [SegmentOutput] {
        var result: [SegmentOutput] = []
        for try await (name, version, filter, description, definedAt) in try await postgres.query(query, logger: logger).decode(
            (String, Int, String, String?, Date).self)
        {
            result.append(
                SegmentOutput(
                    name: name, version: version, filter: try JSONDecoder().decode(AudienceFilter.self, from: Data(filter.utf8)),
                    description: description, definedAt: definedAt))
        }
        return result
    }
}
