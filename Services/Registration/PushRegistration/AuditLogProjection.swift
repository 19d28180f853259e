import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore

/// Keeps `push.audit_log` from `push.audit` (docs/admin-api.md, "Audit trail"): one row per
/// `AdminActionRecorded`, written once (a replay or a redelivery changes nothing).
package struct AuditLogProjection: EnvelopeProjection {
    package enum Event: Sendable {
        case recorded(AdminActionRecorded, Date)
    }

    package let name: String
    package let topics: [String]
    package let decoder: EventDecoder<Event>

    package init(name: String = "push-audit-projection", topic: String) {
        self.name = name
        self.topics = [topic]
        var decoder = EventDecoder<Event>()
        decoder.register(AdminActionRecorded.self) { event, metadata in .recorded(event, metadata.occurredAt) }
        self.decoder = decoder
    }

    package func apply(_ events: [ProjectedEvent<Event>], on connection: PostgresConnection, logger: Logger) async throws {
        for projected in events {
            switch projected.event {
            case .recorded(let action, let at):
                try await connection.query(
                    """
                    INSERT INTO push.audit_log (audit_id, recorded_at, operator_name, role, method, path, permission, status, request_id, service)
                    VALUES (\(action.auditId), \(at), \(action.operatorName), \(action.role), \(action.method), \(action.path), \(action.permission),
                            \(action.status), \(action.requestId), \(action.service))
                    ON CONFLICT (audit_id) DO NOTHING
                    """,
                    logger: logger)
            }
        }
    }
}
