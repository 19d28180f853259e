import Crypto
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// docs/openapi.json against the running service: every documented operation is called and
/// must answer one of its documented statuses, and the document covers every route the tests
/// know the service serves.
@Suite("OpenAPI document matches the service", .serialized)
struct OpenAPIDocumentTests {
    static let documentURL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/openapi.json")

    struct Operation: Hashable {
        var method: String
        var path: String
    }

    static func load() throws -> (operations: [Operation: [String: Any]], document: [String: Any]) {
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: documentURL)) as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var operations: [Operation: [String: Any]] = [:]
        for (path, item) in paths {
            for (method, operation) in item where ["get", "post", "put", "delete"].contains(method) {
                operations[Operation(method: method.uppercased(), path: path)] = operation as? [String: Any]
            }
        }
        return (operations, document)
    }

    static func documentedStatuses(_ operation: [String: Any]) -> Set<Int> {
        Set(((operation["responses"] as? [String: Any]) ?? [:]).keys.compactMap(Int.init))
    }

    static func example(_ operation: [String: Any]) -> Any? {
        ((((operation["requestBody"] as? [String: Any])?["content"] as? [String: Any])?["application/json"] as? [String: Any])?["example"])
    }

    static func call(_ harness: RegistrationHarness, _ method: String, _ path: String, json: Any?, token: String?, form: String? = nil) async throws -> (
        Int, Data
    ) {
        var request = URLRequest(url: URL(string: harness.baseURL.absoluteString + path)!)
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let json {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = try JSONSerialization.data(withJSONObject: json)
        }
        if let form {
            request.setValue("application/x-www-form-urlencoded;charset=UTF-8", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(form.utf8)
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return (try #require(response as? HTTPURLResponse).statusCode, data)
    }

    @Test("every documented operation answers a documented status, with and without the token")
    func operationsMatch() async throws {
        let (operations, _) = try Self.load()
        let served: Set<Operation> = [
            .init(method: "POST", path: "/nms/mobile/1/registerIOS.jssp"), .init(method: "POST", path: "/nms/mobile/1/registerAndroid.jssp"),
            .init(method: "GET", path: "/admin/v1/services"), .init(method: "POST", path: "/admin/v1/services"),
            .init(method: "GET", path: "/admin/v1/services/{name}"), .init(method: "PUT", path: "/admin/v1/services/{name}"),
            .init(method: "DELETE", path: "/admin/v1/services/{name}"), .init(method: "GET", path: "/admin/v1/services/{name}/apps"),
            .init(method: "POST", path: "/admin/v1/services/{name}/apps"), .init(method: "GET", path: "/admin/v1/apps"),
            .init(method: "GET", path: "/admin/v1/apps/{id}"), .init(method: "PUT", path: "/admin/v1/apps/{id}"),
            .init(method: "DELETE", path: "/admin/v1/apps/{id}"),
            .init(method: "GET", path: "/admin/v1/apps/{id}/credentials"), .init(method: "PUT", path: "/admin/v1/apps/{id}/credentials"),
            .init(method: "GET", path: "/admin/v1/services/{name}/devices"), .init(method: "POST", path: "/admin/v1/apps/{id}/quarantine/lift"),
            .init(method: "POST", path: "/admin/v1/services/{name}/unsubscribe"), .init(method: "POST", path: "/admin/v1/services/{name}/resubscribe"),
            .init(method: "POST", path: "/admin/v1/services/{name}/erase"),
            .init(method: "GET", path: "/admin/v1/services/{name}/templates"), .init(method: "GET", path: "/admin/v1/services/{name}/templates/{template}"),
            .init(method: "PUT", path: "/admin/v1/services/{name}/templates/{template}"),
            .init(method: "GET", path: "/admin/v1/services/{name}/segments"), .init(method: "GET", path: "/admin/v1/services/{name}/segments/{segment}"),
            .init(method: "PUT", path: "/admin/v1/services/{name}/segments/{segment}"),
            .init(method: "GET", path: "/admin/v1/services/{name}/frequency-cap"), .init(method: "PUT", path: "/admin/v1/services/{name}/frequency-cap"),
            .init(method: "DELETE", path: "/admin/v1/services/{name}/frequency-cap"),
            .init(method: "GET", path: "/admin/v1/operators"), .init(method: "GET", path: "/admin/v1/operators/{name}"),
            .init(method: "PUT", path: "/admin/v1/operators/{name}"), .init(method: "POST", path: "/admin/v1/operators/{name}/tokens"),
            .init(method: "DELETE", path: "/admin/v1/operators/{name}/tokens/{tokenId}"),
            .init(method: "PUT", path: "/admin/v1/operators/{name}/password"), .init(method: "POST", path: "/admin/v1/sessions"),
            .init(method: "GET", path: "/admin/v1/session"), .init(method: "DELETE", path: "/admin/v1/session"),
        ]
        #expect(Set(operations.keys) == served, "the document lists exactly the routes the service serves")

        try await RegistrationHarness.run { harness in
            let (operations, _) = try Self.load()
            let name = "doc-\(UUID().uuidString.prefix(8).lowercased())"
            var appId = ""
            var integrationKey = ""
            var tokenId = ""
            var sessionToken = ""
            // Creation first, deletion last, so every path parameter names a real resource.
            let order = [
                "POST /admin/v1/services", "GET /admin/v1/services", "GET /admin/v1/services/{name}", "PUT /admin/v1/services/{name}",
                "POST /admin/v1/services/{name}/apps", "GET /admin/v1/services/{name}/apps", "GET /admin/v1/apps",
                "PUT /admin/v1/services/{name}/templates/{template}", "GET /admin/v1/services/{name}/templates",
                "GET /admin/v1/services/{name}/templates/{template}", "PUT /admin/v1/services/{name}/segments/{segment}",
                "GET /admin/v1/services/{name}/segments", "GET /admin/v1/services/{name}/segments/{segment}",
                "PUT /admin/v1/services/{name}/frequency-cap", "GET /admin/v1/services/{name}/frequency-cap",
                "DELETE /admin/v1/services/{name}/frequency-cap",
                "PUT /admin/v1/operators/{name}", "PUT /admin/v1/operators/{name}/password", "POST /admin/v1/sessions", "GET /admin/v1/session",
                "DELETE /admin/v1/session", "GET /admin/v1/operators", "GET /admin/v1/operators/{name}",
                "POST /admin/v1/operators/{name}/tokens", "DELETE /admin/v1/operators/{name}/tokens/{tokenId}",
                "GET /admin/v1/apps/{id}", "PUT /admin/v1/apps/{id}", "PUT /admin/v1/apps/{id}/credentials",
                "GET /admin/v1/apps/{id}/credentials", "POST /nms/mobile/1/registerIOS.jssp",
                "POST /nms/mobile/1/registerAndroid.jssp", "GET /admin/v1/services/{name}/devices", "POST /admin/v1/apps/{id}/quarantine/lift",
                "POST /admin/v1/services/{name}/unsubscribe", "POST /admin/v1/services/{name}/resubscribe", "POST /admin/v1/services/{name}/erase",
                "DELETE /admin/v1/apps/{id}", "DELETE /admin/v1/services/{name}",
            ]
            #expect(Set(order) == Set(operations.keys.map { "\($0.method) \($0.path)" }))
            for entry in order {
                let parts = entry.split(separator: " ").map(String.init)
                let operation = try #require(operations[Operation(method: parts[0], path: parts[1])])
                var path = parts[1].replacingOccurrences(of: "{name}", with: name).replacingOccurrences(of: "{id}", with: appId)
                    .replacingOccurrences(of: "{template}", with: "welcome").replacingOccurrences(of: "{segment}", with: "premium-fr").replacingOccurrences(
                        of: "{tokenId}", with: tokenId)
                // The lookup needs a user key or a token (the registrations above used user key "").
                if entry == "GET /admin/v1/services/{name}/devices" { path += "?userKey=nobody" }
                var body = Self.example(operation)
                if entry == "POST /admin/v1/services" { body = ["name": name, "label": "Documented"] }
                // An operator named like the service, limited to it (the example names another).
                if entry == "PUT /admin/v1/operators/{name}" { body = ["role": "marketer", "services": [name]] }
                // The sign-in takes no bearer token: that operator, with the password just set.
                if entry == "POST /admin/v1/sessions" {
                    let setPassword = try #require(operations[Operation(method: "PUT", path: "/admin/v1/operators/{name}/password")])
                    let password = try #require((Self.example(setPassword) as? [String: String])?["password"])
                    let (status, data) = try await Self.call(harness, "POST", path, json: ["operator": name, "password": password], token: nil)
                    #expect(status == 201 && Self.documentedStatuses(operation).contains(201), "\(entry): \(status) \(String(decoding: data, as: UTF8.self))")
                    sessionToken = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["token"] as? String ?? ""
                    let (wrong, _) = try await Self.call(harness, "POST", path, json: ["operator": name, "password": "not the password"], token: nil)
                    #expect(wrong == 401 && Self.documentedStatuses(operation).contains(401))
                    continue
                }
                if entry == "PUT /admin/v1/apps/{id}/credentials" {
                    // The documented example with a real key in place of the elided one.
                    var example = try #require(body as? [String: String])
                    example["privateKey"] = P256.Signing.PrivateKey().pemRepresentation
                    body = example
                }
                let documented = Self.documentedStatuses(operation)
                if parts[1].hasPrefix("/nms/") {
                    let form = "registrationToken=\(RegistrationEndpointTests.hexToken())&mobileAppUuid=\(integrationKey)"
                    let (status, _) = try await Self.call(harness, parts[0], path, json: nil, token: nil, form: form)
                    #expect(documented.contains(status), "\(entry) answered \(status), documented \(documented.sorted())")
                    continue
                }
                let (unauthorized, _) = try await Self.call(harness, parts[0], path, json: body, token: nil)
                #expect(unauthorized == 401 && documented.contains(401), "\(entry) without a token")
                // Ending a session needs one (the bootstrap token is none: 400).
                let bearer = entry == "DELETE /admin/v1/session" ? sessionToken : RegistrationHarness.adminToken
                let (status, data) = try await Self.call(harness, parts[0], path, json: body, token: bearer)
                #expect(documented.contains(status), "\(entry) answered \(status), documented \(documented.sorted()): \(String(decoding: data, as: UTF8.self))")
                if [
                    "POST /admin/v1/apps/{id}/quarantine/lift", "POST /admin/v1/services/{name}/unsubscribe", "POST /admin/v1/services/{name}/resubscribe",
                    "POST /admin/v1/services/{name}/erase",
                ]
                .contains(entry) {
                    // The example's token or user key has no subscription: the documented 404.
                    #expect(status == 404, "\(entry) for a token the app does not have: \(String(decoding: data, as: UTF8.self))")
                    continue
                }
                #expect((200..<300).contains(status), "\(entry) with its documented example succeeds: \(String(decoding: data, as: UTF8.self))")
                if entry == "POST /admin/v1/services/{name}/apps", let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
                    appId = object["appId"] as? String ?? ""
                    integrationKey = object["integrationKey"] as? String ?? ""
                }
                if entry == "POST /admin/v1/operators/{name}/tokens", let object = try JSONSerialization.jsonObject(with: data) as? [String: Any] {
                    tokenId = object["tokenId"] as? String ?? ""
                }
            }
        }
    }
}
