import Foundation
import Hummingbird
import NIOCore
import PushStore

/// A refusal an admin API answers with its own status: the thrower names the problem in
/// `reason`, and for a whole document refused (a delivery request) lists every problem found in
/// `problems`, the first being `reason`.
package protocol AdminRefusal: Error {
    var status: Int { get }
    var reason: String { get }
    var problems: [String] { get }
}

extension AdminRefusal {
    package var problems: [String] { [] }
}

extension AdminPrincipal {
    /// Refuses (403) a service the operator may not act on.
    package func require(service: String) throws {
        guard mayActOn(service: service) else {
            throw AdminError(status: 403, reason: "operator '\(name)' may not act on service '\(service.prefix(64))'")
        }
    }
}

/// A refusal with no domain type of its own (a missing id, a bad query parameter).
package struct AdminError: AdminRefusal, CustomStringConvertible {
    package var status: Int
    package var reason: String
    package var problems: [String]

    package init(status: Int, reason: String, problems: [String] = []) {
        self.status = status
        self.reason = reason
        self.problems = problems
    }

    package static func badRequest(_ reason: String) -> AdminError { AdminError(status: 400, reason: reason) }
    package static func notFound(_ reason: String) -> AdminError { AdminError(status: 404, reason: reason) }

    package var description: String { "\(status) \(reason)" }
}

/// What every admin API (`/admin/v1`, served by the registration and the delivery-planning
/// services; docs/admin-api.md) does the same way: the bearer token and the permission each
/// route declares, JSON bodies in and out, and errors as `{"error": "<reason>"}` (plus
/// `"problems": [...]` when a document has several).
///
/// A bearer token is the bootstrap `PUSH_ADMIN_TOKEN` (an `admin` on every service, unless
/// `PUSH_ADMIN_TOKEN_DISABLED` turns it off) or an operator's personal token (`pat_...`,
/// `OperatorDirectory`). A route names the permission it needs; a route about one service
/// also checks, once it knows the service, that the operator may act on it
/// (`AdminPrincipal.require(service:)`).
package struct AdminAPI: Sendable {
    /// Largest request body read (a delivery request with 100,000 user keys fits).
    package static let maximumBodyBytes = 8 * 1024 * 1024

    let token: AdminToken?
    let operators: OperatorDirectory?
    let audit: AdminAudit?

    package init(token: AdminToken?, operators: OperatorDirectory?, audit: AdminAudit? = nil) {
        self.token = token
        self.operators = operators
        self.audit = audit
    }

    /// Who the request's bearer token names; nil when it names nobody.
    func principal(_ request: Request) async throws -> AdminPrincipal? {
        let authorization = request.headers[.authorization]
        if let token, token.accepts(authorization: authorization) { return .bootstrap }
        guard let operators, let authorization, authorization.lowercased().hasPrefix("bearer ") else { return nil }
        return try await operators.principal(token: authorization.dropFirst(7))
    }

    /// Checks the bearer token and `permission`, runs `body` with the request's principal, and
    /// turns refusals into JSON errors: 401 for a missing, unknown, revoked or expired token
    /// (or an inactive operator's), 403 for a permission or a service the operator does not have.
    /// A call by a known principal that changes something, or reads devices, is recorded in the
    /// audit trail with the status answered, allowed or not.
    package func guarded(
        _ request: Request, _ permission: AdminPermission, _ body: (AdminPrincipal) async throws -> Response
    ) async throws -> Response {
        guard token != nil else { return Self.error(503, "admin API disabled: set PUSH_ADMIN_TOKEN") }
        guard let principal = try await principal(request) else {
            var response = Self.error(401, "missing or wrong bearer token")
            response.headers[.wwwAuthenticate] = "Bearer"
            return response
        }
        let response: Response
        do {
            response = try await Self.answering {
                guard principal.has(permission) else {
                    return Self.error(403, "operator '\(principal.name)' (\(principal.role.rawValue)) does not have permission \(permission.rawValue)")
                }
                return try await body(principal)
            }
        } catch {
            await audit?.record(principal, request, permission, status: 500)
            throw error
        }
        await audit?.record(principal, request, permission, status: Int(response.status.code))
        return response
    }

    /// A route that takes no bearer token (the console's sign-in, `POST /admin/v1/sessions`,
    /// which checks a password instead): refusals answered as JSON errors like every route's;
    /// `body` records its own audit entries through the API's audit trail, when there is one.
    package func unauthenticated(_ request: Request, _ body: (AdminAudit?) async throws -> Response) async throws -> Response {
        guard token != nil else { return Self.error(503, "admin API disabled: set PUSH_ADMIN_TOKEN") }
        return try await Self.answering { try await body(audit) }
    }

    /// `body`'s answer, with a refusal (`AdminRefusal`) or a body that did not decode answered as
    /// a JSON error; other errors are thrown.
    private static func answering(_ body: () async throws -> Response) async throws -> Response {
        do {
            return try await body()
        } catch let refusal as any AdminRefusal {
            return error(refusal.status, refusal.reason, problems: refusal.problems)
        } catch let decoding as DecodingError {
            return error(400, "invalid JSON body: \(describe(decoding))")
        }
    }

    /// The request's body, at most `maximumBytes` (413 beyond).
    package static func body(_ request: Request, maximumBytes: Int = 256 * 1024) async throws -> ByteBuffer {
        do {
            return try await request.body.collect(upTo: maximumBytes)
        } catch {
            throw AdminError(status: 413, reason: "request body larger than \(maximumBytes) bytes")
        }
    }

    /// Decodes a JSON body; a string holding NUL is refused (PostgreSQL text and jsonb cannot
    /// hold it: refused here rather than stored in an event no projection can write).
    package static func decode<T: Decodable>(_ type: T.Type, _ request: Request) async throws -> T {
        let body = try await body(request)
        let value = try JSONDecoder().decode(T.self, from: Data(buffer: body))
        guard !containsNUL(value) else { throw AdminError.badRequest("a string in the JSON body contains a NUL character (\\u0000)") }
        return value
    }

    /// Whether any string inside `value` (fields, arrays, dictionaries, optionals) holds a NUL.
    package static func containsNUL(_ value: Any) -> Bool {
        if let text = value as? String { return text.utf8.contains(0) }
        return Mirror(reflecting: value).children.contains { containsNUL($0.value) }
    }

    package static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }.joined(separator: ".")
        }
        return switch error {
        case .keyNotFound(let key, _): "missing field \(key.stringValue)"
        case .typeMismatch(_, let context), .valueNotFound(_, let context): "wrong type at \(path(context))"
        // A value the type refused by its own rule (an audience filter's group with other keys)
        // is named with the rule; an empty path is text that is not JSON at all.
        case .dataCorrupted(let context) where !context.codingPath.isEmpty: "invalid value at \(path(context)): \(context.debugDescription)"
        case .dataCorrupted: "not valid JSON"
        @unknown default: "undecodable"
        }
    }

    package static func json(_ status: HTTPResponse.Status, _ value: some Encodable) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        encoder.dateEncodingStrategy = .iso8601
        return json(status, bytes: try encoder.encode(value))
    }

    package static func json(_ status: HTTPResponse.Status, bytes: Data) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    package static func error(_ status: Int, _ reason: String, problems: [String] = []) -> Response {
        struct Body: Encodable {
            var error: String
            var problems: [String]?
        }
        let body = (try? JSONEncoder().encode(Body(error: reason, problems: problems.isEmpty ? nil : problems))) ?? Data()
        return json(HTTPResponse.Status(code: status), bytes: body)
    }
}
