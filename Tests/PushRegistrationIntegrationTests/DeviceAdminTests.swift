import Foundation
import PushEvents
import PushRegistration
import PushTestSupport
import Testing

/// Looking devices up and lifting a quarantine through the admin API of the real registration
/// service, over the real broker and database.
@Suite("Admin API: devices and quarantine", .serialized)
struct DeviceAdminTests {
    static func body(key: String, token: String, userKey: String) -> String {
        RegistrationEndpointTests.iosBody(key: key, token: token).replacingOccurrences(of: "userKey=userkey", with: "userKey=\(userKey)")
    }

    static func list(_ answer: RegistrationHarness.Answer) -> [[String: Any]] {
        (try? JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [[String: Any]]) ?? []
    }

    @Test("a user key's devices with their quarantine; a lift is an event that enables the device again, 409 when not quarantined")
    func lookUpAndLift() async throws {
        try await RegistrationHarness.run { h in
            let app = try await h.defineApp(platform: .ios)
            let service = try await h.serviceName(of: app.appId)
            let alice = "alice-\(UUID().uuidString.prefix(6))"
            let (phone, tablet, other) = (RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken())
            for (token, user) in [(phone, alice), (tablet, alice), (other, "bob")] {
                #expect(try await h.post("/nms/mobile/1/registerIOS.jssp", body: Self.body(key: app.integrationKey, token: token, userKey: user)).status == 200)
            }
            try await eventually("registered") { try await h.subscription(appId: app.appId, token: other) != nil }
            try await h.disable(appId: app.appId, token: tablet, reason: "Unregistered", invalidSince: Date())
            try await eventually("quarantined") { try await h.subscription(appId: app.appId, token: tablet)?["disabled"] == "true" }

            let found = try await h.admin("GET", "/services/\(service)/devices?userKey=\(alice)")
            #expect(found.status == 200)
            let devices = Self.list(found)
            #expect(Set(devices.compactMap { $0["registrationToken"] as? String }) == [phone, tablet], "alice's two devices, not bob's")
            let quarantined = try #require(devices.first { $0["registrationToken"] as? String == tablet })
            #expect((quarantined["quarantine"] as? [String: Any])?["reason"] as? String == "Unregistered")
            #expect((quarantined["quarantine"] as? [String: Any])?["disabledAt"] != nil)
            #expect(devices.first { $0["registrationToken"] as? String == phone }?["quarantine"] == nil, "an enabled device has no quarantine")
            #expect(quarantined["params"] as? [String: String] != nil)

            let byToken = Self.list(try await h.admin("GET", "/services/\(service)/devices?token=\(other)"))
            #expect(byToken.map { $0["userKey"] as? String } == ["bob"])

            // The device's latest messages, found by its token's digest (the broad log's only
            // device index since migration 31), with or without the token on the row.
            let (logged, unnamed) = (UUID(), UUID())
            for (message, token, minutesAgo) in [(logged, other as String?, 2), (unnamed, nil, 1)] {
                try await h.postgres.query(
                    """
                    INSERT INTO push.broad_log (message_id, delivery_id, app_id, registration_token, token_digest, platform, status, attempts, created_at,
                                                updated_at, sent_at, log_month)
                    VALUES (\(message), 'device-admin', \(app.appId), \(token), push.token_digest(\(other)), 'ios', 'sent', 1,
                            now() - \(minutesAgo) * interval '1 minute', now(), now(), date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                    """, logger: h.logger)
            }
            let history = Self.list(try await h.admin("GET", "/services/\(service)/devices?token=\(other)&messages=5")).first?["lastMessages"]
            #expect(
                (history as? [[String: Any]])?.compactMap { ($0["messageId"] as? String)?.lowercased() } == [
                    unnamed.uuidString.lowercased(), logged.uuidString.lowercased(),
                ])
            #expect(try await h.admin("GET", "/services/\(service)/devices").status == 400, "a user key or a token is needed")
            #expect(try await h.admin("GET", "/services/nope-\(UUID())/devices?userKey=x").status == 404)
            #expect(try await h.admin("GET", "/services/\(service)/devices?userKey=\(alice)", token: nil).status == 401)

            let lifted = try await h.admin("POST", "/apps/\(app.appId)/quarantine/lift", json: #"{"registrationToken": "\#(tablet)"}"#)
            #expect(lifted.status == 200, "\(lifted.body)")
            #expect(lifted.body.contains(#""applied":true"#))
            #expect(try await h.subscription(appId: app.appId, token: tablet)?["disabled"] == "false", "enabled when the answer came")
            let after = Self.list(try await h.admin("GET", "/services/\(service)/devices?token=\(tablet)"))
            #expect(after.count == 1 && after.first?["quarantine"] == nil)
            #expect(try await h.admin("POST", "/apps/\(app.appId)/quarantine/lift", json: #"{"registrationToken": "\#(tablet)"}"#).status == 409)
            #expect(try await h.admin("POST", "/apps/\(app.appId)/quarantine/lift", json: #"{"registrationToken": "unknown"}"#).status == 404)

            // The lift is an event on push.subscriptions (so a replay agrees), keyed by the device's
            // digest (version 2): the token is nowhere in the record.
            let records = try await h.records(h.configuration.topics.subscriptions.name).filter {
                String(decoding: $0.value, as: UTF8.self).contains("\"SubscriptionReenabled\"")
            }
            #expect(records.count == 1)
            let lift = try #require(records.first)
            let digest = TokenDigest.of(tablet)
            #expect(String(decoding: lift.key ?? [], as: UTF8.self) == TokenDigest.subscriptionKey(appId: app.appId, tokenDigest: digest))
            #expect(!String(decoding: lift.value, as: UTF8.self).contains(tablet))
            let event = try #require(try JSONSerialization.jsonObject(with: Data(lift.value)) as? [String: Any])
            #expect(event["version"] as? Int == 2)
            #expect((event["data"] as? [String: Any])?["tokenDigest"] as? String == digest)
        }
    }
}
