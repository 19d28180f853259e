import Foundation
import PushRegistration
import PushTestSupport
import Testing

/// Message templates through the admin API of the real registration service: each PUT is a new
/// version (a `TemplateDefined` on push.catalog), read back through the catalog projection.
@Suite("Admin API: message templates", .serialized)
struct TemplateAdminTests {
    static func object(_ answer: RegistrationHarness.Answer) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any]) ?? [:]
    }

    @Test("each definition is the next version; the latest is listed, any version can be read; bad names and unknown ones are refused")
    func versions() async throws {
        try await RegistrationHarness.run { h in
            let service = "tpl-\(UUID().uuidString.prefix(8).lowercased())"
            #expect(try await h.admin("POST", "/services", json: #"{"name": "\#(service)", "label": "Templates"}"#).status == 201)
            // The 201 waits at most 5 s for the catalog projection, whose consumer joins its new
            // group as the test starts: on a loaded machine the service shows a little later.
            try await eventually("the service shown") { try await h.admin("GET", "/services/\(service)").status == 200 }
            let first = try await h.admin("PUT", "/services/\(service)/templates/welcome", json: #"{"title": "Welcome", "body": "Hello {{userKey}}"}"#)
            #expect(first.status == 200, "\(first.body)")
            #expect(Self.object(first)["version"] as? Int == 1)
            let second = try await h.admin(
                "PUT", "/services/\(service)/templates/welcome", json: #"{"title": "Welcome!", "body": "Hi {{userKey}}", "ios": {"badge": 2}}"#)
            #expect(Self.object(second)["version"] as? Int == 2)
            #expect(try await h.admin("PUT", "/services/\(service)/templates/promo", json: #"{"body": "Sale"}"#).status == 200)

            let list = try JSONSerialization.jsonObject(with: Data(try await h.admin("GET", "/services/\(service)/templates").body.utf8)) as? [[String: Any]]
            #expect(list?.map { "\($0["name"] ?? ""):\($0["version"] ?? "")" } == ["promo:1", "welcome:2"], "the latest of each, by name")
            let latest = Self.object(try await h.admin("GET", "/services/\(service)/templates/welcome"))
            #expect((latest["content"] as? [String: Any])?["body"] as? String == "Hi {{userKey}}")
            let old = Self.object(try await h.admin("GET", "/services/\(service)/templates/welcome?version=1"))
            #expect((old["content"] as? [String: Any])?["body"] as? String == "Hello {{userKey}}", "an older version stays readable")

            #expect(try await h.admin("GET", "/services/\(service)/templates/welcome?version=9").status == 404)
            // Past PostgreSQL's integer range: no such version (it was a 500, found by schemathesis).
            #expect(try await h.admin("GET", "/services/\(service)/templates/welcome?version=17207639130043402").status == 404)
            #expect(try await h.admin("GET", "/services/\(service)/templates/none").status == 404)
            #expect(try await h.admin("PUT", "/services/\(service)/templates/bad%20name", json: #"{"body": "x"}"#).status == 400)
            #expect(try await h.admin("PUT", "/services/nope-\(UUID())/templates/welcome", json: #"{"body": "x"}"#).status == 404)
            #expect(try await h.admin("PUT", "/services/\(service)/templates/welcome", json: #"{"body": "x"}"#, token: nil).status == 401)
        }
    }
}
