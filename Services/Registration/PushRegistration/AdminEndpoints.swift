import Foundation
import Hummingbird
import Logging
import NIOCore
import PushEvents
import PushRuntime

/// The admin API under `/admin/v1` (docs/admin-api.md, docs/openapi.yaml). Every route requires
/// `Authorization: Bearer <PUSH_ADMIN_TOKEN>`; without a configured token the API answers 503.
/// Errors are JSON `{"error": "<reason>"}`.
package struct AdminEndpoints: Sendable {
    let admin: CatalogAdmin
    let devices: DeviceAdmin
    let erasure: PersonErasure
    let token: AdminToken?

    package init(admin: CatalogAdmin, devices: DeviceAdmin, erasure: PersonErasure, token: AdminToken?) {
        self.admin = admin
        self.devices = devices
        self.erasure = erasure
        self.token = token
    }

    package func addRoutes(to router: Router<RegistrationRequestContext>) {
        let group = router.group("/admin/v1")
        group.get("/services") { request, context in
            try await guarded(request) { try await Self.json(.ok, admin.services()) }
        }
        group.post("/services") { request, context in
            try await guarded(request) {
                let input = try await Self.decode(ServiceInput.self, request, context)
                return try await Self.json(.created, admin.createService(input))
            }
        }
        group.get("/services/:name") { request, context in
            try await guarded(request) {
                let name = try context.parameters.require("name")
                guard let service = try await admin.service(named: name) else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
                return try Self.json(.ok, service)
            }
        }
        group.put("/services/:name") { request, context in
            try await guarded(request) {
                let input = try await Self.decode(ServiceInput.self, request, context)
                return try await Self.json(.ok, admin.updateService(named: try context.parameters.require("name"), input))
            }
        }
        group.delete("/services/:name") { request, context in
            try await guarded(request) {
                try await admin.deleteService(named: try context.parameters.require("name"))
                return Response(status: .noContent)
            }
        }
        group.get("/services/:name/apps") { request, context in
            try await guarded(request) {
                let name = try context.parameters.require("name")
                guard try await admin.service(named: name) != nil else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
                return try await Self.json(.ok, admin.apps(serviceName: name))
            }
        }
        group.post("/services/:name/apps") { request, context in
            try await guarded(request) {
                let input = try await Self.decode(AppInput.self, request, context)
                return try await Self.json(.created, admin.createApp(serviceName: try context.parameters.require("name"), input))
            }
        }
        group.get("/apps") { request, context in
            try await guarded(request) { try await Self.json(.ok, admin.apps()) }
        }
        group.get("/apps/:id") { request, context in
            try await guarded(request) {
                let id = try Self.appID(context)
                guard let app = try await admin.app(id: id) else { throw RegistrationError(status: 404, reason: "no app \(id)") }
                return try Self.json(.ok, app)
            }
        }
        group.put("/apps/:id") { request, context in
            try await guarded(request) {
                let input = try await Self.decode(AppInput.self, request, context)
                return try await Self.json(.ok, admin.updateApp(id: try Self.appID(context), input))
            }
        }
        group.get("/apps/:id/credentials") { request, context in
            try await guarded(request) { try await Self.json(.ok, admin.credentials(appId: try Self.appID(context))) }
        }
        group.put("/apps/:id/credentials") { request, context in
            try await guarded(request) {
                let input = try await Self.decode(CredentialInput.self, request, context)
                return try await Self.json(.ok, admin.setCredentials(appId: try Self.appID(context), input))
            }
        }
        group.get("/services/:name/templates") { request, context in
            try await guarded(request) { try Self.json(.ok, try await admin.templates(serviceName: try context.parameters.require("name"))) }
        }
        group.get("/services/:name/templates/:template") { request, context in
            try await guarded(request) {
                let name = try context.parameters.require("template")
                let version = try Self.version(request)
                guard let template = try await admin.template(serviceName: try context.parameters.require("name"), name: name, version: version) else {
                    throw AdminError.notFound("no template \(name)\(version.map { " version \($0)" } ?? "")")
                }
                return try Self.json(.ok, template)
            }
        }
        group.put("/services/:name/templates/:template") { request, context in
            try await guarded(request) {
                let content = try await Self.decode(DeliveryRequest.Content.self, request, context)
                return try Self.json(
                    .ok,
                    try await admin.defineTemplate(
                        serviceName: try context.parameters.require("name"), name: try context.parameters.require("template"), content: content))
            }
        }
        group.get("/services/:name/frequency-cap") { request, context in
            try await guarded(request) { try Self.json(.ok, try await admin.frequencyCap(serviceName: try context.parameters.require("name"))) }
        }
        group.put("/services/:name/frequency-cap") { request, context in
            try await guarded(request) {
                let cap = try await Self.decode(FrequencyCap.self, request, context)
                return try Self.json(.ok, try await admin.setFrequencyCap(serviceName: try context.parameters.require("name"), cap))
            }
        }
        group.delete("/services/:name/frequency-cap") { request, context in
            try await guarded(request) {
                _ = try await admin.setFrequencyCap(serviceName: try context.parameters.require("name"), nil)
                return Response(status: .noContent)
            }
        }
        group.get("/services/:name/segments") { request, context in
            try await guarded(request) { try Self.json(.ok, try await admin.segments(serviceName: try context.parameters.require("name"))) }
        }
        group.get("/services/:name/segments/:segment") { request, context in
            try await guarded(request) {
                let name = try context.parameters.require("segment")
                let version = try Self.version(request)
                guard let segment = try await admin.segment(serviceName: try context.parameters.require("name"), name: name, version: version) else {
                    throw AdminError.notFound("no segment \(name)\(version.map { " version \($0)" } ?? "")")
                }
                return try Self.json(.ok, segment)
            }
        }
        group.put("/services/:name/segments/:segment") { request, context in
            try await guarded(request) {
                let input = try await Self.decode(CatalogAdmin.SegmentInput.self, request, context)
                return try Self.json(
                    .ok,
                    try await admin.defineSegment(serviceName: try context.parameters.require("name"), name: try context.parameters.require("segment"), input))
            }
        }
        group.get("/services/:name/devices") { request, context in
            try await guarded(request) {
                let query = request.uri.queryParameters
                let messages = try query.get("messages").map { text in
                    guard let number = Int(text) else { throw AdminError.badRequest("messages must be an integer") }
                    return number
                }
                return try Self.json(
                    .ok,
                    try await devices.devices(
                        serviceName: try context.parameters.require("name"), userKey: query.get("userKey"), token: query.get("token"),
                        messages: messages ?? 10))
            }
        }
        for (path, subscribe) in [("/services/:name/unsubscribe", false), ("/services/:name/resubscribe", true)] {
            group.post(RouterPath(stringLiteral: path)) { request, context in
                try await guarded(request) {
                    struct Body: Decodable {
                        var userKey: String?
                        var registrationToken: String?
                    }
                    let body = try await Self.decode(Body.self, request, context)
                    return try Self.json(
                        .ok,
                        try await devices.setSubscribed(
                            subscribe, serviceName: try context.parameters.require("name"), userKey: body.userKey, token: body.registrationToken))
                }
            }
        }
        group.post("/services/:name/erase") { request, context in
            try await guarded(request) {
                struct Body: Decodable {
                    var userKey: String?
                    var registrationToken: String?
                }
                let body = try await Self.decode(Body.self, request, context)
                return try Self.json(
                    .ok,
                    try await erasure.erase(serviceName: try context.parameters.require("name"), userKey: body.userKey, token: body.registrationToken))
            }
        }
        group.post("/apps/:id/quarantine/lift") { request, context in
            try await guarded(request) {
                struct Body: Decodable { var registrationToken: String }
                let body = try await Self.decode(Body.self, request, context)
                return try Self.json(.ok, try await devices.liftQuarantine(appId: try Self.appID(context), token: body.registrationToken))
            }
        }
        group.delete("/apps/:id") { request, context in
            try await guarded(request) {
                try await admin.deleteApp(id: try Self.appID(context))
                return Response(status: .noContent)
            }
        }
    }

    private func guarded(_ request: Request, _ body: () async throws -> Response) async throws -> Response {
        try await AdminAPI(token: token).guarded(request, body)
    }

    static func appID(_ context: RegistrationRequestContext) throws -> UUID {
        let text = try context.parameters.require("id")
        guard let id = UUID(uuidString: text) else { throw RegistrationError.badRequest("app id must be a UUID") }
        return id
    }

    /// A versioned definition's `?version=` (templates, segments): nil for the latest.
    static func version(_ request: Request) throws -> Int? {
        try request.uri.queryParameters.get("version").map { text in
            guard let number = Int(text), number >= 1 else { throw AdminError.badRequest("version must be a positive integer") }
            return number
        }
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: RegistrationRequestContext) async throws -> T {
        try await AdminAPI.decode(type, request)
    }

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        try AdminAPI.json(status, value)
    }
}
