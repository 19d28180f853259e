import Foundation
import Hummingbird
import Logging
import NIOCore
import PushEvents
import PushRuntime
import PushStore

/// The admin API under `/admin/v1` (docs/admin-api.md, docs/openapi.json). Every route requires
/// a bearer token (`PUSH_ADMIN_TOKEN`, or an operator's personal token) and declares the
/// permission it needs (`AdminPermission`); without a configured `PUSH_ADMIN_TOKEN` the API
/// answers 503. Errors are JSON `{"error": "<reason>"}`.
package struct AdminEndpoints: Sendable {
    let admin: CatalogAdmin
    let devices: DeviceAdmin
    let erasure: PersonErasure
    let operators: OperatorAdmin
    let api: AdminAPI

    package init(admin: CatalogAdmin, devices: DeviceAdmin, erasure: PersonErasure, operators: OperatorAdmin, api: AdminAPI) {
        self.admin = admin
        self.devices = devices
        self.erasure = erasure
        self.operators = operators
        self.api = api
    }

    package func addRoutes(to router: Router<RegistrationRequestContext>) {
        let group = router.group("/admin/v1")
        group.get("/services") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                try await Self.json(.ok, admin.services().filter { principal.mayActOn(service: $0.name) })
            }
        }
        group.post("/services") { request, context in
            try await guarded(request, context, .catalogWrite) { principal in
                let input = try await Self.decode(ServiceInput.self, request, context)
                return try await Self.json(.created, admin.createService(input))
            }
        }
        group.get("/services/:name") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                let name = try context.parameters.require("name")
                guard let service = try await admin.service(named: name) else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
                return try Self.json(.ok, service)
            }
        }
        group.put("/services/:name") { request, context in
            try await guarded(request, context, .catalogWrite) { principal in
                let input = try await Self.decode(ServiceInput.self, request, context)
                return try await Self.json(.ok, admin.updateService(named: try context.parameters.require("name"), input))
            }
        }
        group.delete("/services/:name") { request, context in
            try await guarded(request, context, .catalogWrite) { principal in
                try await admin.deleteService(named: try context.parameters.require("name"))
                return Response(status: .noContent)
            }
        }
        group.get("/services/:name/apps") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                let name = try context.parameters.require("name")
                guard try await admin.service(named: name) != nil else { throw RegistrationError(status: 404, reason: "no service named \(name)") }
                return try await Self.json(.ok, admin.apps(serviceName: name))
            }
        }
        group.post("/services/:name/apps") { request, context in
            try await guarded(request, context, .catalogWrite) { principal in
                let input = try await Self.decode(AppInput.self, request, context)
                return try await Self.json(.created, admin.createApp(serviceName: try context.parameters.require("name"), input))
            }
        }
        group.get("/apps") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                try await Self.json(.ok, admin.apps().filter { principal.mayActOn(service: $0.serviceName) })
            }
        }
        group.get("/apps/:id") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                let id = try Self.appID(context)
                guard let app = try await admin.app(id: id) else { throw RegistrationError(status: 404, reason: "no app \(id)") }
                return try Self.json(.ok, app)
            }
        }
        group.put("/apps/:id") { request, context in
            try await guarded(request, context, .catalogWrite) { principal in
                let input = try await Self.decode(AppInput.self, request, context)
                return try await Self.json(.ok, admin.updateApp(id: try Self.appID(context), input))
            }
        }
        group.get("/apps/:id/credentials") { request, context in
            try await guarded(request, context, .catalogRead) { principal in try await Self.json(.ok, admin.credentials(appId: try Self.appID(context))) }
        }
        group.put("/apps/:id/credentials") { request, context in
            try await guarded(request, context, .credentialsWrite) { principal in
                let input = try await Self.decode(CredentialInput.self, request, context)
                return try await Self.json(.ok, admin.setCredentials(appId: try Self.appID(context), input))
            }
        }
        group.get("/services/:name/templates") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                try Self.json(.ok, try await admin.templates(serviceName: try context.parameters.require("name")))
            }
        }
        group.get("/services/:name/templates/:template") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                let name = try context.parameters.require("template")
                let version = try Self.version(request)
                guard let template = try await admin.template(serviceName: try context.parameters.require("name"), name: name, version: version) else {
                    throw AdminError.notFound("no template \(name)\(version.map { " version \($0)" } ?? "")")
                }
                return try Self.json(.ok, template)
            }
        }
        group.put("/services/:name/templates/:template") { request, context in
            try await guarded(request, context, .contentWrite) { principal in
                let content = try await Self.decode(DeliveryRequest.Content.self, request, context)
                return try Self.json(
                    .ok,
                    try await admin.defineTemplate(
                        serviceName: try context.parameters.require("name"), name: try context.parameters.require("template"), content: content))
            }
        }
        group.get("/services/:name/frequency-cap") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                try Self.json(.ok, try await admin.frequencyCap(serviceName: try context.parameters.require("name")))
            }
        }
        group.put("/services/:name/frequency-cap") { request, context in
            try await guarded(request, context, .contentWrite) { principal in
                let cap = try await Self.decode(FrequencyCap.self, request, context)
                return try Self.json(.ok, try await admin.setFrequencyCap(serviceName: try context.parameters.require("name"), cap))
            }
        }
        group.delete("/services/:name/frequency-cap") { request, context in
            try await guarded(request, context, .contentWrite) { principal in
                _ = try await admin.setFrequencyCap(serviceName: try context.parameters.require("name"), nil)
                return Response(status: .noContent)
            }
        }
        group.get("/services/:name/segments") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                try Self.json(.ok, try await admin.segments(serviceName: try context.parameters.require("name")))
            }
        }
        group.get("/services/:name/segments/:segment") { request, context in
            try await guarded(request, context, .catalogRead) { principal in
                let name = try context.parameters.require("segment")
                let version = try Self.version(request)
                guard let segment = try await admin.segment(serviceName: try context.parameters.require("name"), name: name, version: version) else {
                    throw AdminError.notFound("no segment \(name)\(version.map { " version \($0)" } ?? "")")
                }
                return try Self.json(.ok, segment)
            }
        }
        group.put("/services/:name/segments/:segment") { request, context in
            try await guarded(request, context, .contentWrite) { principal in
                let input = try await Self.decode(CatalogAdmin.SegmentInput.self, request, context)
                return try Self.json(
                    .ok,
                    try await admin.defineSegment(serviceName: try context.parameters.require("name"), name: try context.parameters.require("segment"), input))
            }
        }
        group.get("/services/:name/devices") { request, context in
            try await guarded(request, context, .devicesRead) { principal in
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
                try await guarded(request, context, .devicesWrite) { principal in
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
            try await guarded(request, context, .erasure) { principal in
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
            try await guarded(request, context, .devicesWrite) { principal in
                struct Body: Decodable { var registrationToken: String }
                let body = try await Self.decode(Body.self, request, context)
                return try Self.json(.ok, try await devices.liftQuarantine(appId: try Self.appID(context), token: body.registrationToken))
            }
        }
        group.delete("/apps/:id") { request, context in
            try await guarded(request, context, .catalogWrite) { principal in
                try await admin.deleteApp(id: try Self.appID(context))
                return Response(status: .noContent)
            }
        }
        group.get("/operators") { request, context in
            try await guarded(request, context, .operators) { _ in try await Self.json(.ok, operators.list()) }
        }
        group.get("/operators/:operator") { request, context in
            try await guarded(request, context, .operators) { _ in
                try await Self.json(.ok, operators.operator(named: try context.parameters.require("operator")))
            }
        }
        group.put("/operators/:operator") { request, context in
            try await guarded(request, context, .operators) { _ in
                let input = try await Self.decode(OperatorAdmin.OperatorInput.self, request, context)
                return try await Self.json(.ok, operators.define(name: try context.parameters.require("operator"), input))
            }
        }
        group.post("/operators/:operator/tokens") { request, context in
            try await guarded(request, context, .operators) { _ in
                let input = try await Self.decode(OperatorAdmin.TokenInput.self, request, context)
                return try await Self.json(.created, operators.issueToken(operatorName: try context.parameters.require("operator"), input))
            }
        }
        group.put("/operators/:operator/password") { request, context in
            try await guarded(request, context, .operators) { _ in
                let input = try await Self.decode(OperatorAdmin.PasswordInput.self, request, context)
                try await operators.setPassword(operatorName: try context.parameters.require("operator"), input)
                return Response(status: .noContent)
            }
        }
        // The console's sign-in: a password, no bearer token (docs/admin-api.md, "Console sign-in").
        group.post("/sessions") { request, context in
            try await api.unauthenticated(request) { audit in
                let input = try await Self.decode(OperatorAdmin.SignInInput.self, request, context)
                func recorded(_ role: AdminRole?, _ status: Int) async {
                    guard let role else { return }
                    await audit?.record(AdminPrincipal(name: input.operator, role: role, services: nil), request, .session, status: status)
                }
                switch try await operators.signIn(input) {
                case .signedIn(let session, let principal):
                    await audit?.record(principal, request, .session, status: 201)
                    return try Self.json(.created, session)
                case .refused(let role):
                    await recorded(role, 401)
                    return AdminAPI.error(401, "wrong operator name or password")
                case .locked(let seconds, let role):
                    await recorded(role, 429)
                    var response = AdminAPI.error(429, "too many wrong passwords for this operator; try again in \(seconds) s")
                    response.headers[.retryAfter] = String(seconds)
                    return response
                }
            }
        }
        group.get("/session") { request, context in
            try await guarded(request, context, .session) { principal in try Self.json(.ok, OperatorAdmin.Identity(principal)) }
        }
        // Ends the token that calls it: a console session at sign-out (or a personal token).
        group.delete("/session") { request, context in
            try await guarded(request, context, .session) { principal in
                let bearer = request.headers[.authorization].map { $0.dropFirst(7) } ?? ""
                guard let (tokenId, _) = OperatorToken.parse(bearer), principal != .bootstrap else {
                    throw RegistrationError.badRequest("the bootstrap token is not a session: there is nothing to end")
                }
                try await operators.revokeToken(operatorName: principal.name, tokenId: tokenId)
                return Response(status: .noContent)
            }
        }
        group.delete("/operators/:operator/tokens/:token") { request, context in
            try await guarded(request, context, .operators) { _ in
                let text = try context.parameters.require("token")
                guard let tokenId = UUID(uuidString: text) else { throw RegistrationError.badRequest("token id must be a UUID") }
                try await operators.revokeToken(operatorName: try context.parameters.require("operator"), tokenId: tokenId)
                return Response(status: .noContent)
            }
        }
    }

    /// Checks `permission`, then the service a route names: in its path (`:name`), or through
    /// its app (`:id`) for an operator limited to some services.
    private func guarded(
        _ request: Request, _ context: RegistrationRequestContext, _ permission: AdminPermission, _ body: (AdminPrincipal) async throws -> Response
    ) async throws -> Response {
        try await api.guarded(request, permission) { principal in
            if let service = context.parameters.get("name") { try principal.require(service: service) }
            if principal.services != nil, let text = context.parameters.get("id"), let id = UUID(uuidString: text),
                let app = try await admin.app(id: id)
            {
                try principal.require(service: app.serviceName)
            }
            return try await body(principal)
        }
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
