import Foundation
import PushEvents
import PushTestSupport
import Testing

/// `content.languages` through the real planner, PostgreSQL and broker: each device's message
/// carries its language's texts, and the preview counts the devices per language.
@Suite("Content per language, planned and previewed", .serialized)
struct ContentLanguagesIntegrationTests {
    @Test("French, Austrian-German and other devices of both platforms get their texts; the preview counts them per language")
    func plannedPerLanguage() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let service = try await h.defineService()
            for app in service.apps {
                try await h.addSubscriptions(app, count: 6)
                // user1 fr-FR, user2 fr_CA, user3 de-AT, user4 en-US, user5 none, user6 quarantined French.
                try await h.postgres.query(
                    """
                    UPDATE push.subscriptions SET os_language = CASE user_key WHEN 'user1' THEN 'fr-FR' WHEN 'user2' THEN 'fr_CA' WHEN 'user3' THEN 'de-AT'
                        WHEN 'user4' THEN 'en-US' WHEN 'user6' THEN 'fr' ELSE '' END,
                        disabled = user_key = 'user6', disabled_reason = CASE WHEN user_key = 'user6' THEN 'Unregistered' END,
                        disabled_at = CASE WHEN user_key = 'user6' THEN now() END
                    WHERE app_id = \(app.appId)
                    """, logger: h.logger)
            }
            let content = #"""
                {"title": "Your flight", "body": "Hello {{userKey}}",
                 "languages": {"fr": {"title": "Votre vol", "body": "Bonjour {{userKey}}"}, "de": {"body": "Servus {{param.nickname}}"}}}
                """#
            let requestId = "languages-\(h.suffix)"
            let document = requestJSON(requestId: requestId, service: service.name, content: content)

            let preview = try await DeliveryAdminTests.call(port: port, "POST", "/deliveries/preview?samples=6", body: document)
            #expect(preview.status == 200, "\(String(decoding: preview.body, as: UTF8.self))")
            let counts = try #require(preview.json["languages"] as? [[String: Any]])
            #expect(counts.map { "\($0["language"] as? String ?? "default")=\($0["devices"] as? Int ?? -1)" } == ["fr=4", "default=4", "de=2"])
            let samples = try #require(preview.json["samples"] as? [[String: Any]])
            #expect(
                Set(samples.map { "\($0["userKey"] as? String ?? "")=\($0["language"] as? String ?? "default")" })
                    == ["user1=fr", "user2=fr", "user3=de", "user4=default", "user5=default"])

            try await h.publishRequest(document)
            let deliveryId = try await h.waitPlanned(requestId)
            var texts: [String: String] = [:]
            for record in try await h.messageRecords() where record.headers.string("push-delivery-id") == deliveryId {
                let object = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])
                let data = try #require(object["data"] as? [String: Any])
                let token = try #require(data["registrationToken"] as? String)
                let user = try #require(try await h.text("SELECT user_key FROM push.subscriptions WHERE registration_token = \(token)"))
                if let payload = data["payload"] as? String {
                    let aps = try #require(try JSONSerialization.jsonObject(with: Data(payload.utf8)) as? [String: Any])["aps"] as? [String: Any]
                    let alert = try #require(aps?["alert"] as? [String: String])
                    texts["ios " + user] = [alert["title"], alert["body"]].compactMap { $0 }.joined(separator: " / ")
                } else {
                    let message = try #require(data["message"] as? String)
                    let fcm = try #require(try JSONSerialization.jsonObject(with: Data(message.utf8)) as? [String: Any])["data"] as? [String: String]
                    texts["android " + user] = [fcm?["title"], fcm?["_msg"]].compactMap { $0 }.joined(separator: " / ")
                }
            }
            var expected: [String: String] = [:]
            for platform in ["ios", "android"] {
                expected["\(platform) user1"] = "Votre vol / Bonjour user1"
                expected["\(platform) user2"] = "Votre vol / Bonjour user2"
                expected["\(platform) user3"] = "Servus n3"
                expected["\(platform) user4"] = "Your flight / Hello user4"
                expected["\(platform) user5"] = "Your flight / Hello user5"
            }
            #expect(texts == expected)
        }
    }
}
