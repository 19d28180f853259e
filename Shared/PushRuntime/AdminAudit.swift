import Foundation
import Hummingbird
import Kafka
import Logging
import PushEvents
import PushStore

/// The admin APIs' audit trail (docs/admin-api.md, "Audit trail"): an `AdminActionRecorded` on
/// `push.audit` for every call by a known principal that changes something (any method but
/// GET) or reads personal data (`devices:read`), allowed or refused, with the status answered.
/// Published before the answer; a broker that does not store it in time is logged as an error
/// and the answer stands (the action itself is done or refused already).
package struct AdminAudit: Sendable {
    let producer: KafkaProducer
    let topic: String
    let logger: Logger

    package init(producer: KafkaProducer, topic: String, logger: Logger) {
        self.producer = producer
        self.topic = topic
        self.logger = logger
    }

    static let requestIdHeader = HTTPFields.Element.Name("X-Request-Id")!

    /// Whether a call is recorded.
    package static func records(method: HTTPRequest.Method, permission: AdminPermission) -> Bool {
        method != .get || permission == .devicesRead
    }

    /// The event of one call: the path without its query, the service a `/services/{name}`
    /// path names, the caller's `X-Request-Id` when it is printable and at most 128 bytes.
    package static func event(
        _ principal: AdminPrincipal, method: String, path: String, requestId: String?, permission: AdminPermission, status: Int, auditId: UUID = UUID()
    ) -> AdminActionRecorded {
        let parts = path.split(separator: "/", omittingEmptySubsequences: true)
        let service = parts.count >= 4 && parts[0] == "admin" && parts[2] == "services" ? String(parts[3]).removingPercentEncoding : nil
        let requestId = requestId.flatMap { id in
            (1...128).contains(id.utf8.count) && id.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F }) ? id : nil
        }
        return AdminActionRecorded(
            auditId: auditId, operatorName: principal.name, role: principal.role.rawValue, method: method, path: path,
            permission: permission.rawValue, status: status, requestId: requestId ?? auditId.uuidString.lowercased(), service: service)
    }

    package func record(_ principal: AdminPrincipal, _ request: Request, _ permission: AdminPermission, status: Int) async {
        guard Self.records(method: request.method, permission: permission) else { return }
        let event = Self.event(
            principal, method: request.method.rawValue, path: request.uri.path, requestId: request.headers[Self.requestIdHeader],
            permission: permission, status: status)
        do {
            try await producer.send(KafkaProducerRecord(topic: topic, event: EventEnvelope(key: principal.name, payload: event)))
        } catch {
            logger.error(
                "Admin action not stored in the audit trail", metadata: ["operator": "\(principal.name)", "path": "\(event.path)", "error": "\(error)"])
        }
    }
}
