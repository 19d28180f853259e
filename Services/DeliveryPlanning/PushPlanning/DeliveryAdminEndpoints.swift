import Foundation
import Hummingbird
import NIOCore
import PushRuntime
import PushStore

/// The deliveries' part of the admin API (`/admin/v1`, docs/admin-api.md), served by the
/// delivery-planning service on `PLANNER_ADMIN_PORT` behind the same bearer tokens as the
/// registration service's catalog part (`PUSH_ADMIN_TOKEN` or an operator's personal token),
/// each route with its permission; an operator limited to some services reaches only their
/// deliveries.
package struct DeliveryAdminEndpoints: Sendable {
    let admin: DeliveryAdmin
    let api: AdminAPI

    package init(admin: DeliveryAdmin, token: AdminToken?, operators: OperatorDirectory?, audit: AdminAudit?) {
        self.admin = admin
        self.api = AdminAPI(token: token, operators: operators, audit: audit)
    }

    /// The `service` a request document names, when it is a JSON object with one (the
    /// validation names every other problem).
    static func serviceName(_ document: ByteBuffer) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(buffer: document)) as? [String: Any])?["service"] as? String
    }

    /// Refuses (403) a delivery of a service the operator may not act on; an unknown delivery
    /// is left to the route (404).
    func require(_ principal: AdminPrincipal, delivery id: String) async throws {
        guard principal.services != nil, let service = try await admin.serviceName(deliveryId: id) else { return }
        try principal.require(service: service)
    }

    package func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        let group = router.group("/admin/v1")
        group.post("/deliveries") { request, _ in
            try await api.guarded(request, .deliveriesWrite) { principal in
                let document = try await AdminAPI.body(request, maximumBytes: AdminAPI.maximumBodyBytes)
                if let service = Self.serviceName(document) { try principal.require(service: service) }
                return try AdminAPI.json(.accepted, try await admin.submit(Array(buffer: document)))
            }
        }
        group.post("/deliveries/preview") { request, _ in
            try await api.guarded(request, .deliveriesWrite) { principal in
                let document = try await AdminAPI.body(request, maximumBytes: AdminAPI.maximumBodyBytes)
                if let service = Self.serviceName(document) { try principal.require(service: service) }
                let samples = try Self.intParameter(request, "samples", default: 3)
                return try AdminAPI.json(.ok, try await admin.preview(Array(buffer: document), samplesPerApp: samples))
            }
        }
        group.get("/deliveries") { request, _ in
            try await api.guarded(request, .deliveriesRead) { principal in
                let query = request.uri.queryParameters
                let limit = try Self.intParameter(request, "limit", default: 50)
                let proofs = query.get("proofs").map { $0 == "true" || $0 == "1" } ?? false
                if let service = query.get("service") { try principal.require(service: service) }
                let list = try await admin.list(service: query.get("service"), status: query.get("status"), proofs: proofs, limit: limit)
                return try AdminAPI.json(.ok, list.filter { principal.mayActOn(service: $0.serviceName) })
            }
        }
        group.get("/deliveries/:id") { request, context in
            try await api.guarded(request, .deliveriesRead) { principal in
                let id = try context.parameters.require("id")
                try await require(principal, delivery: id)
                guard let detail = try await admin.detail(deliveryId: id) else {
                    throw AdminError.notFound("no delivery \(id.prefix(64)) (an accepted request shows here once the deliveries projection read it)")
                }
                return try AdminAPI.json(.ok, detail)
            }
        }
        for control in DeliveryAdmin.Control.allCases {
            group.post("/deliveries/:id/\(control.rawValue)") { request, context in
                try await api.guarded(request, .deliveriesWrite) { principal in
                    let id = try context.parameters.require("id")
                    try await require(principal, delivery: id)
                    return try AdminAPI.json(.accepted, try await admin.control(control, deliveryId: id))
                }
            }
        }
        group.get("/delivery-requests/:requestId") { request, context in
            try await api.guarded(request, .deliveriesRead) { principal in
                let requestId = try context.parameters.require("requestId")
                guard let state = try await admin.requestState(requestId: requestId) else {
                    throw AdminError.notFound("no request \(requestId.prefix(200)) was accepted, rejected or submitted here")
                }
                if let id = state.deliveryId { try await require(principal, delivery: id) }
                return try AdminAPI.json(.ok, state)
            }
        }
    }

    static func intParameter(_ request: Request, _ name: String, default value: Int) throws -> Int {
        guard let text = request.uri.queryParameters.get(name) else { return value }
        guard let number = Int(text) else { throw AdminError.badRequest("\(name) must be an integer") }
        return number
    }
}
