import Foundation
import PushEvents
import Testing

@testable import PushPlanning

/// The provider payloads' exact bytes, written down while `JSONText` built them, so that a
/// change of JSON writer cannot change what the providers receive: quotes, backslashes,
/// control characters (`\b` and `\f` as `\u0008` and `\u000c`), DEL, U+2028/U+2029, an emoji and
/// `/` in every text, option, variable name and token. JSONSerialization must also read every
/// value back unchanged.
@Suite("Payload bytes")
struct PayloadBytesTests {
    static let awkward = "q\"b\\s\u{08}\u{0C}\n\r\t\u{01}\u{1F}\u{7F} \u{2028}\u{2029} 😀 é /"
    static let awkwardJSON = #""q\"b\\s\u0008\u000c\n\r\t\u0001\u001f"# + "\u{7F} \u{2028}\u{2029} 😀 é /\""
    static let key = "k\"\\\u{08}😀"
    static let keyJSON = #""k\"\\\u0008"# + "😀\""
    static let token = "tok\"\\"
    static let tokenJSON = #""tok\"\\""#
    static let plannedAt = Date(timeIntervalSince1970: 1_800_000_000)

    static let ios = PlanningApp(
        appId: UUID(uuidString: "5C1B0F8E-0000-4000-8000-000000000001")!, integrationKey: "ios-key", platform: .ios, environment: "production",
        bundleId: "com.example", fcmProjectId: nil, variables: [key], credential: nil)
    static let android = PlanningApp(
        appId: UUID(uuidString: "5C1B0F8E-0000-4000-8000-000000000002")!, integrationKey: "android-key", platform: .android, environment: "production",
        bundleId: nil, fcmProjectId: "example", variables: [key], credential: nil)

    func message(_ content: DeliveryRequest.Content, app: PlanningApp) throws -> PlannedMessage {
        let delivery = DeliveryAccepted(
            deliveryId: "2026", requestId: "r", serviceId: UUID(), serviceName: "s", apps: [app.reference],
            audience: .everyone, content: content, validUntil: Self.plannedAt.addingTimeInterval(3600), sendAt: Self.plannedAt, throttlePerSecond: nil,
            acceptedAt: Self.plannedAt
        )
        let factory = try MessageFactory(delivery: delivery, apps: [app])
        return try #require(factory.message(for: .init(appId: app.appId, registrationToken: Self.token, userKey: "u", params: [:]), plannedAt: Self.plannedAt))
    }

    func object(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("APNs payload: every awkward character, byte for byte")
    func apns() throws {
        let a = Self.awkward
        let e = Self.awkwardJSON
        let planned = try message(
            .init(
                title: a, subtitle: a, body: a, variables: [Self.key: a],
                ios: .init(
                    badge: 2, sound: .named(a), category: "c", threadId: a, mutableContent: true, contentAvailable: true, interruptionLevel: "active",
                    relevanceScore: 0.25)
            ), app: Self.ios)
        guard case .apns(let message) = planned else {
            Issue.record("not APNs")
            return
        }
        let mId = String(try #require(message.broadLogId))
        let expected =
            #"{"aps":{"alert":{"title":"# + e + #","subtitle":"# + e + #","body":"# + e + #"},"badge":2,"sound":"# + e
            + #","category":"c","thread-id":"# + e
            + #","mutable-content":1,"content-available":1,"interruption-level":"active","relevance-score":0.25},"_mId":""#
            + mId + #"","_dId":"2026","# + Self.keyJSON + ":" + e + "}"
        #expect(Array(message.payload.utf8) == Array(expected.utf8))
        let payload = try object(message.payload)
        #expect(payload[Self.key] as? String == a)
        #expect(((payload["aps"] as? [String: Any])?["alert"] as? [String: String]) == ["title": a, "subtitle": a, "body": a])
    }

    @Test("FCM message, data and notification mode: every awkward character, byte for byte")
    func fcm() throws {
        let a = Self.awkward
        let e = Self.awkwardJSON
        let data = try message(
            .init(title: a, body: a, variables: [Self.key: a], android: .init(priority: "normal", channelId: a, collapseKey: a)), app: Self.android)
        guard case .fcm(let dataMessage) = data else {
            Issue.record("not FCM")
            return
        }
        let mId = String(try #require(dataMessage.broadLogId))
        let expectedData =
            #"{"token":"# + Self.tokenJSON + #","data":{"_mId":""# + mId + #"","_dId":"2026","_msg":"# + e + #","title":"# + e
            + "," + Self.keyJSON + ":" + e + #"},"android":{"priority":"normal","ttl":"3600s","collapse_key":"# + e + "}}"
        #expect(Array(dataMessage.message.utf8) == Array(expectedData.utf8))
        #expect(
            try object(dataMessage.message)["data"] as? [String: String] == ["_mId": mId, "_dId": "2026", "_msg": a, "title": a, Self.key: a])

        let notification = try message(
            .init(title: a, body: a, variables: [Self.key: a], android: .init(mode: "notification", channelId: a)), app: Self.android)
        guard case .fcm(let notificationMessage) = notification else {
            Issue.record("not FCM")
            return
        }
        let expectedNotification =
            #"{"token":"# + Self.tokenJSON + #","data":{"_mId":""# + mId + #"","_dId":"2026","# + Self.keyJSON + ":" + e
            + #"},"notification":{"title":"# + e + #","body":"# + e + #"},"android":{"priority":"high","ttl":"3600s","notification":{"channel_id":"# + e + "}}}"
        #expect(Array(notificationMessage.message.utf8) == Array(expectedNotification.utf8))
        let body = try object(notificationMessage.message)
        #expect(body["token"] as? String == Self.token)
        #expect(body["notification"] as? [String: String] == ["title": a, "body": a])
    }

    @Test("the FCM size limit counts data and notification, as before")
    func fcmLimit() throws {
        // data {"_mId":"7","_dId":"2026","_msg":"<n>"} is 31 + 1 + 4 + n bytes.
        let fits = String(repeating: "x", count: 4096 - 36)
        guard case .fcm = try message(.init(body: fits), app: Self.android) else {
            Issue.record("a payload of exactly 4096 bytes fails")
            return
        }
        guard case .failed(let failure) = try message(.init(body: fits + "x"), app: Self.android) else {
            Issue.record("4097 bytes pass")
            return
        }
        #expect(failure.reason == "payload-too-large")
    }
}
