import Foundation
import Hummingbird
import Logging
import NIOCore

/// The admin API under `/admin/v1` (docs/admin-api.md, docs/openapi.yaml). Every route requires
/// `Authorization: Bearer <PUSH_ADMIN_TOKEN>`; without a configured token the API answers 503.
/// Errors are JSON `{"error": "<reason>"}`.
package struct AdminEndpoints: Sendable {
    let admin: CatalogAdmin
    let token: AdminToken?

    package init(admin: CatalogAdmin, token: AdminToken?) {
        self.admin = admin
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
        group.delete("/apps/:id") { request, context in
            try await guarded(request) {
                try await admin.deleteApp(id: try Self.appID(context))
                return Response(status: .noContent)
            }
        }
    }

    /// Checks the bearer token, runs `body`, and turns refusals into JSON errors.
    private func guarded(_ request: Request, _ body: () async throws -> Response) async throws -> Response {
        guard let token else { return Self.error(503, "admin API disabled: set PUSH_ADMIN_TOKEN") }
        guard token.accepts(authorization: request.headers[.authorization]) else {
            var response = Self.error(401, "missing or wrong bearer token")
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        do {
            return try await body()
        } catch let error as RegistrationError {
            return Self.error(error.status, error.reason)
        } catch let error as DecodingError {
            return Self.error(400, "invalid JSON body: \(Self.describe(error))")
        }
    }

    static func appID(_ context: RegistrationRequestContext) throws -> UUID {
        let text = try context.parameters.require("id")
        guard let id = UUID(uuidString: text) else { throw RegistrationError.badRequest("app id must be a UUID") }
        return id
    }

    static func decode<T: Decodable>(_ type: T.Type, _ request: Request, _ context: RegistrationRequestContext) async throws -> T {
        let body = try await request.body.collect(upTo: 256 * 1024)
        let value = try JSONDecoder().decode(T.self, from: Data(buffer: body))
        // PostgreSQL text and jsonb cannot hold NUL: refused here rather than stored in an event
        // no projection can write.
        guard !containsNUL(value) else { throw RegistrationError.badRequest("a string in the JSON body contains a NUL character (\\u0000)") }
        return value
    }

    /// Whether any string inside `value` (fields, arrays, dictionaries, optionals) holds a NUL.
    static func containsNUL(_ value: Any) -> Bool {
        if let text = value as? String { return text.utf8.contains(0) }
        return Mirror(reflecting: value).children.contains { containsNUL($0.value) }
    }

    static func describe(_ error: DecodingError) -> String {
        switch error {
        case .keyNotFound(let key, _): "missing field \(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "wrong type at \(context.codingPath.map(\.stringValue).joined(separator: "."))"
        case .dataCorrupted: "not valid JSON"
        @unknown default: "undecodable"
        }
    }

    static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return Response(
            status: status,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: try encoder.encode(value)))
        )
    }

    static func error(_ status: Int, _ reason: String) -> Response {
        let body = (try? JSONEncoder().encode(["error": reason])) ?? Data()
        return Response(
            status: HTTPResponse.Status(code: status),
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: body))
        )
    }
}
