import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushRegistration
import PushRuntime
import PushTestSupport
import Testing

/// Unsubscribing and resubscribing devices through the admin API of the real registration
/// service, over the real broker and database: events on `push.subscriptions`, the projection's
/// `unsubscribed_at`, a re-registration that keeps it, and a replay that rebuilds it.
@Suite("Admin API: unsubscribe and resubscribe", .serialized)
struct UnsubscribeTests {
    static func object(_ answer: RegistrationHarness.Answer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.body)")
    }

    static func changed(_ answer: RegistrationHarness.Answer) throws -> Set<String> {
        let list = try #require(try object(answer)["changed"] as? [[String: Any]], "\(answer.body)")
        return Set(list.compactMap { $0["registrationToken"] as? String })
    }

    static func unsubscribed(_ h: RegistrationHarness, appId: UUID) async throws -> Set<String> {
        let rows = try await h.postgres.query(
            "SELECT registration_token FROM push.subscriptions WHERE app_id = \(appId) AND unsubscribed_at IS NOT NULL", logger: h.logger)
        var tokens: Set<String> = []
        for try await token in rows.decode(String.self) { tokens.insert(token) }
        return tokens
    }

    @Test("a user's devices unsubscribed by one call, one event each; a re-registration keeps them unsubscribed; a token resubscribed; a replay agrees")
    func unsubscribeResubscribeReplay() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let (app, live) = try await RegistrationHarness.run(suffix: suffix) { h in
            let app = try await h.defineApp(platform: .ios)
            let service = try await h.serviceName(of: app.appId)
            let alice = "alice-\(UUID().uuidString.prefix(6))"
            let (phone, tablet, other) = (RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken())
            for (token, user) in [(phone, alice), (tablet, alice), (other, "bob")] {
                let body = DeviceAdminTests.body(key: app.integrationKey, token: token, userKey: user)
                #expect(try await h.post("/nms/mobile/1/registerIOS.jssp", body: body).status == 200)
            }
            try await eventually("registered") {
                try await h.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(app.appId)") == 3
            }

            let unsubscribed = try await h.admin("POST", "/services/\(service)/unsubscribe", json: #"{"userKey": "\#(alice)"}"#)
            #expect(unsubscribed.status == 200, "\(unsubscribed.body)")
            #expect(try Self.changed(unsubscribed) == [phone, tablet])
            #expect(try Self.object(unsubscribed)["applied"] as? Bool == true)
            #expect(try await Self.unsubscribed(h, appId: app.appId) == [phone, tablet], "projected when the answer came; bob untouched")
            let shown = DeviceAdminTests.list(try await h.admin("GET", "/services/\(service)/devices?userKey=\(alice)"))
            #expect(shown.count == 2 && shown.allSatisfy { $0["unsubscribedAt"] is String }, "\(shown)")
            #expect(DeviceAdminTests.list(try await h.admin("GET", "/services/\(service)/devices?token=\(other)")).first?["unsubscribedAt"] == nil)

            // The SDK registers the phone again (it does so on its own): it stays unsubscribed.
            let before = try await h.count(
                "SELECT extract(epoch FROM registered_at)::int FROM push.subscriptions WHERE app_id = \(app.appId) AND registration_token = \(phone)")
            try await Task.sleep(for: .seconds(1.1))
            #expect(
                try await h.post("/nms/mobile/1/registerIOS.jssp", body: DeviceAdminTests.body(key: app.integrationKey, token: phone, userKey: alice)).status
                    == 200)
            try await eventually("re-registered") {
                try await h.count(
                    "SELECT extract(epoch FROM registered_at)::int FROM push.subscriptions WHERE app_id = \(app.appId) AND registration_token = \(phone)")
                    > before
            }
            #expect(try await Self.unsubscribed(h, appId: app.appId) == [phone, tablet], "a re-registration does not subscribe again")

            let again = try await h.admin("POST", "/services/\(service)/unsubscribe", json: #"{"userKey": "\#(alice)"}"#)
            #expect(try again.status == 200 && Self.changed(again).isEmpty, "already unsubscribed: nothing changes, no event")

            let resubscribed = try await h.admin("POST", "/services/\(service)/resubscribe", json: #"{"registrationToken": "\#(tablet)"}"#)
            #expect(resubscribed.status == 200, "\(resubscribed.body)")
            #expect(try Self.changed(resubscribed) == [tablet])
            #expect(try await Self.unsubscribed(h, appId: app.appId) == [phone])

            // Refusals, each with its reason.
            let both = try await h.admin("POST", "/services/\(service)/unsubscribe", json: #"{"userKey": "a", "registrationToken": "b"}"#)
            #expect(both.status == 400 && both.body.contains("exactly one of userKey and registrationToken"), "\(both.body)")
            #expect(try await h.admin("POST", "/services/\(service)/unsubscribe", json: "{}").status == 400)
            let nobody = try await h.admin("POST", "/services/\(service)/unsubscribe", json: #"{"userKey": "nobody"}"#)
            #expect(nobody.status == 404 && nobody.body.contains("no subscription of this userKey"), "\(nobody.body)")
            #expect(try await h.admin("POST", "/services/nope-\(UUID())/unsubscribe", json: #"{"userKey": "x"}"#).status == 404)
            #expect(try await h.admin("POST", "/services/\(service)/unsubscribe", json: #"{"userKey": "x"}"#, token: nil).status == 401)

            // One event per changed subscription, keyed by the device.
            let events = try await h.records(h.configuration.topics.subscriptions.name).compactMap {
                try? JSONSerialization.jsonObject(with: Data($0.value)) as? [String: Any]
            }
            let keys = { (type: String) in Set(events.filter { $0["type"] as? String == type }.compactMap { $0["key"] as? String }) }
            #expect(
                keys("SubscriptionUnsubscribed")
                    == [
                        SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: PersonalDataKeys.tokenDigest(phone)),
                        SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: PersonalDataKeys.tokenDigest(tablet)),
                    ], "keyed by the token's digest, never the token")
            #expect(events.count { $0["type"] as? String == "SubscriptionUnsubscribed" } == 2)
            #expect(keys("SubscriptionResubscribed") == [SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: PersonalDataKeys.tokenDigest(tablet))])
            return (app.appId, try await RegistrationResilienceTests.snapshot(h, apps: [app.appId]))
        }
        #expect(live.count == 3)

        // With the service stopped, throw the app's rows and the projection's positions away and
        // replay push.subscriptions: the same rows, unsubscribed_at included.
        let configuration = try RuntimeConfiguration(service: "registration-tests", defaultOpsPort: 0)
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: Logger(label: "rebuild"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            try await postgres.query("DELETE FROM push.subscriptions WHERE app_id = \(app)")
            try await postgres.query("DELETE FROM push.consumer_offsets WHERE group_id = \("test.subscriptions-projection.\(suffix)")")
            tasks.cancelAll()
        }
        try await RegistrationHarness.run(suffix: suffix) { h in
            try await eventually("replayed") { try await RegistrationResilienceTests.snapshot(h, apps: [app]) == live }
        }
    }
}
