import Foundation
import Hummingbird
import NIOCore
import PushRuntime

/// The deliveries' part of the admin API (`/admin/v1`, docs/admin-api.md), served by the
/// delivery-planning service on `PLANNER_ADMIN_PORT` behind the same bearer token as the
/// registration service's catalog part.
package struct DeliveryAdminEndpoints: Sendable {
    let admin: DeliveryAdmin
    let api: AdminAPI

    package init(admin: DeliveryAdmin, token: AdminToken?) {
        self.admin = admin
        self.api = AdminAPI(token: token)
    }

    package func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        let group = router.group("/admin/v1")
        group.post("/deliveries") { request, _ in
            try await api.guarded(request) {
                let document = try await AdminAPI.body(request, maximumBytes: AdminAPI.maximumBodyBytes)
                return try AdminAPI.json(.accepted, try await admin.submit(Array(buffer: document)))
            }
        }
        group.post("/deliveries/preview") { request, _ in
            try await api.guarded(request) {
                let document = try await AdminAPI.body(request, maximumBytes: AdminAPI.maximumBodyBytes)
                let samples = try Self.intParameter(request, "samples", default: 3)
                return try AdminAPI.json(.ok, try await admin.preview(Array(buffer: document), samplesPerApp: samples))
            }
        }
        group.get("/deliveries") { request, _ in
            try await api.guarded(request) {
                let query = request.uri.queryParameters
                let limit = try Self.intParameter(request, "limit", default: 50)
                let proofs = query.get("proofs").map { $0 == "true" || $0 == "1" } ?? false
                return try AdminAPI.json(
                    .ok, try await admin.list(service: query.get("service"), status: query.get("status"), proofs: proofs, limit: limit))
            }
        }
        group.get("/deliveries/:id") { request, context in
            try await api.guarded(request) {
                let id = try context.parameters.require("id")
                guard let detail = try await admin.detail(deliveryId: id) else {
                    throw AdminError.notFound("no delivery \(id.prefix(64)) (an accepted request shows here once the deliveries projection read it)")
                }
                return try AdminAPI.json(.ok, detail)
            }
        }
        for control in DeliveryAdmin.Control.allCases {
            group.post("/deliveries/:id/\(control.rawValue)") { request, context in
                try await api.guarded(request) {
                    try AdminAPI.json(.accepted, try await admin.control(control, deliveryId: try context.parameters.require("id")))
                }
            }
        }
        group.get("/delivery-requests/:requestId") { request, context in
            try await api.guarded(request) {
                let requestId = try context.parameters.require("requestId")
                guard let state = try await admin.requestState(requestId: requestId) else {
                    throw AdminError.notFound("no request \(requestId.prefix(200)) was accepted, rejected or submitted here")
                }
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
