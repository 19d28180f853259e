import Foundation

/// One call of an admin API by a known principal that changed something (any method but GET)
/// or read personal data (a device lookup): `push.audit`, key = the operator's name. Names the
/// route by its path without the query (a user key or a token in a query stays out), never a
/// body, a secret or a token (docs/admin-api.md, "Audit trail").
package struct AdminActionRecorded: PushEvent, Hashable {
    package static let eventType = "AdminActionRecorded"
    package static let eventVersion = 1

    package var auditId: UUID
    /// The operator's name, or `bootstrap` for `PUSH_ADMIN_TOKEN`.
    package var operatorName: String
    package var role: String
    /// `POST`, `PUT`, `DELETE` or `GET`.
    package var method: String
    /// The request's path, without its query (`/admin/v1/services/neotrips/erase`).
    package var path: String
    /// The permission the route declares (`erasure`, `deliveries:write`).
    package var permission: String
    /// The HTTP status answered: 2xx done, 4xx refused (403: not allowed), 5xx failed.
    package var status: Int
    /// `X-Request-Id` when the caller sent one (at most 128 printable characters), else the
    /// audit id.
    package var requestId: String
    /// The service the route named, when it names one in its path.
    package var service: String?

    package init(
        auditId: UUID, operatorName: String, role: String, method: String, path: String, permission: String, status: Int, requestId: String,
        service: String?
    ) {
        self.auditId = auditId
        self.operatorName = operatorName
        self.role = role
        self.method = method
        self.path = path
        self.permission = permission
        self.status = status
        self.requestId = requestId
        self.service = service
    }
}
