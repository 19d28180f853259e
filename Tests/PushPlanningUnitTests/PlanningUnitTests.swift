import Foundation
import PushEvents
import PushTestSupport
import Testing

@testable import PushPlanning

@Suite("Personalization templates")
struct MessageTemplateTests {
    @Test("userKey, param, param with fallback, and plain text render per device")
    func forms() throws {
        let template = try MessageTemplate(parsing: "Hi {{userKey}}, {{ param.city }} in {{param.tier|standard}} class {{param.missing}}!")
        #expect(template.render(userKey: "ana@example.com", params: ["city": "Lisbon", "tier": "gold"]) == "Hi ana@example.com, Lisbon in gold class !")
        #expect(template.render(userKey: "", params: ["city": "Porto"]) == "Hi , Porto in standard class !")
        #expect(template.render(userKey: "x", params: ["city": "Faro", "tier": ""]) == "Hi x, Faro in standard class !")
        #expect(try MessageTemplate(parsing: "no placeholder").isConstant)
        #expect(try MessageTemplate(parsing: "{{param.a|b|c}}").render(userKey: "", params: [:]) == "b|c")
    }

    @Test("unknown placeholders and unclosed braces are errors naming the problem")
    func errors() {
        #expect(throws: MessageTemplate.SyntaxError.self) { try MessageTemplate(parsing: "Hello {{firstName}}") }
        #expect(throws: MessageTemplate.SyntaxError.self) { try MessageTemplate(parsing: "Hello {{userKey") }
        #expect(throws: MessageTemplate.SyntaxError.self) { try MessageTemplate(parsing: "{{param.}}") }
        #expect(throws: MessageTemplate.SyntaxError.self) { try MessageTemplate(parsing: "{{param.a b}}") }
        do {
            _ = try MessageTemplate(parsing: "Hello {{firstName}}")
        } catch {
            #expect(error.description.contains("{{firstName}}"))
        }
    }
}

@Suite("Delivery request validation (contract v1)")
struct DeliveryRequestValidationTests {
    static let now = Date(timeIntervalSince1970: 1_795_000_000)
    static let ios = PlanningApp(
        appId: UUID(), integrationKey: "ios-key", platform: .ios, environment: "production", bundleId: "com.example.trips", fcmProjectId: nil,
        variables: ["url"], sounds: ["chime.caf"], credential: nil)
    static let android = PlanningApp(
        appId: UUID(), integrationKey: "android-key", platform: .android, environment: "production", bundleId: nil, fcmProjectId: "example",
        variables: ["url", "deepLink"], sounds: ["gate_chime"], credential: nil)
    static let service = PlanningService(serviceId: UUID(), name: "neotrips", apps: [ios, android])

    func reason(_ json: String, service: PlanningService? = service) -> String? {
        do {
            let request = try DeliveryRequestValidator.parse(Array(json.utf8))
            _ = try DeliveryRequestValidator.validate(request, service: service?.name == request.service ? service : nil, now: Self.now, deliveryId: "1")
            return nil
        } catch {
            return error.reason
        }
    }

    @Test("the example request of the contract is accepted with defaults filled in")
    func example() throws {
        let json = requestJSON(
            requestId: "crm-1", service: "neotrips",
            content:
                #"{"title": "Lisbon", "subtitle": "3 days left", "body": "Hello {{userKey}}", "variables": {"url": "https://example.com/{{param.city|x}}"}, "ios": {"badge": 1, "sound": "default", "interruptionLevel": "active", "relevanceScore": 0.5, "collapseId": "offer-42"}, "android": {"mode": "data", "priority": "high", "channelId": "trips", "collapseKey": "offer-42"}}"#
        )
        let request = try DeliveryRequestValidator.parse(Array(json.utf8))
        let accepted = try DeliveryRequestValidator.validate(request, service: Self.service, now: Self.now, deliveryId: "41")
        #expect(accepted.apps.count == 2)
        #expect(accepted.sendAt == Self.now)
        #expect(accepted.validUntil == Self.now.addingTimeInterval(24 * 3600))
        #expect(accepted.deliveryId == "41", "the id the intake allocated")
    }

    @Test(
        "accepted: a badge-only and a sound-only iOS push without texts, default or a declared sound as a name or a critical-alert dictionary; an Android sound the app declares"
    )
    func soundsAndBadges() {
        for content in [
            #"{"ios": {"badge": 3}}"#, #"{"ios": {"sound": "chime.caf"}}"#, #"{"body": "x", "ios": {"sound": "default"}}"#,
            #"{"body": "x", "ios": {"sound": {"critical": true, "name": "chime.caf", "volume": 0.8}}}"#,
            #"{"body": "x", "ios": {"sound": {"name": "default", "volume": 0}}}"#,
            ##"{"body": "x", "android": {"mode": "notification", "image": "https://example.com/a.png", "icon": "ic_trip", "color": "#1A2b3C", "sound": "default", "tag": "offer", "clickAction": "OPEN_TRIP"}}"##,
            #"{"body": "x", "android": {"mode": "notification", "sound": "gate_chime"}}"#,
        ] {
            #expect(reason(requestJSON(requestId: "r", service: "neotrips", content: content)) == nil, "\(content)")
        }
    }

    @Test("each rejection names its reason")
    func rejections() {
        let future = Self.now.addingTimeInterval(3600).iso
        let cases: [(String, String)] = [
            ("not json", "not a JSON object"),
            (
                #"{"type": "DeliveryRequested", "version": 1, "service": "neotrips", "audience": {"all": true}, "content": {"body": "x"}}"#,
                "missing field requestId"
            ),
            (#"{"type": "DeliveryRequested", "version": 1, "requestId": "r", "audience": {"all": true}, "content": {"body": "x"}}"#, "missing field service"),
            (#"{"type": "DeliveryRequested", "version": 1, "requestId": "r", "service": "neotrips", "content": {"body": "x"}}"#, "missing field audience"),
            (
                #"{"type": "DeliveryRequested", "version": 2, "requestId": "r", "service": "neotrips", "audience": {"all": true}, "content": {"body": "x"}}"#,
                "version 2 is not supported"
            ),
            (
                #"{"type": "Other", "version": 1, "requestId": "r", "service": "neotrips", "audience": {"all": true}, "content": {"body": "x"}}"#,
                "type must be DeliveryRequested"
            ),
            (
                #"{"type": "DeliveryRequested", "version": 1, "requestId": "r", "service": "neotrips", "audience": {"all": true}, "content": {"body": 3}}"#,
                "wrong type at content.body"
            ),
            (requestJSON(requestId: "r", service: "nope"), "unknown service 'nope'"),
            (requestJSON(requestId: "r", service: "neotrips", apps: ["missing-key"]), "unknown app 'missing-key'"),
            (requestJSON(requestId: "r", service: "neotrips", apps: []), "apps is empty"),
            (requestJSON(requestId: "r", service: "neotrips", audience: #"{"userKeys": []}"#), "audience.userKeys is empty"),
            (requestJSON(requestId: "r", service: "neotrips", audience: #"{"where": {}}"#), "audience.where is empty"),
            (requestJSON(requestId: "r", service: "neotrips", audience: #"{}"#), "exactly one of all, userKeys, where"),
            (requestJSON(requestId: "r", service: "neotrips", audience: #"{"all": true, "userKeys": ["a"]}"#), "exactly one of all, userKeys, where"),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{"title": "t"}"#), "content.body is required"),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{}"#), "content.body is required unless the iOS push is silent"),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"sound": "horn.caf"}}"#),
                "content.ios.sound 'horn.caf' is not declared by iOS app 'ios-key' (declared: chime.caf; default is always allowed)"
            ),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"sound": {"name": "horn.caf", "critical": true}}}"#),
                "content.ios.sound.name 'horn.caf' is not declared by iOS app 'ios-key'"
            ),
            (
                requestJSON(
                    requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"sound": {"name": "chime.caf", "critical": true, "volume": 1.5}}}"#),
                "content.ios.sound.volume must be between 0 and 1"
            ),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"sound": {"critical": true}}}"#), "missing field name"),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"sound": 5}}"#), "wrong type at content.ios.sound"),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"sound": ""}}"#), "content.ios.sound must be 1 to 256 bytes"),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "android": {"mode": "notification", "sound": "horn"}}"#),
                "content.android.sound 'horn' is not declared by Android app 'android-key' (declared: gate_chime; default is always allowed)"
            ),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "android": {"image": "https://example.com/a.png"}}"#),
                "content.android.image is a notification option: set android.mode to notification"
            ),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "android": {"mode": "notification", "color": "red"}}"#),
                "content.android.color must be #rrggbb"
            ),
            (
                requestJSON(
                    requestId: "r", service: "neotrips", content: #"{"body": "x", "android": {"mode": "notification", "image": "ftp://example.com/a"}}"#),
                "content.android.image must be an http or https URL"
            ),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "android": {"mode": "notification", "tag": ""}}"#),
                "content.android.tag must be 1 to 1024 bytes"
            ),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "variables": {"coupon": "1"}}"#), "variable 'coupon' is not declared"),
            (requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "Hi {{firstName}}"}"#), "content.body: unknown placeholder {{firstName}}"),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"interruptionLevel": "loud"}}"#),
                "interruptionLevel must be one of"
            ),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "ios": {"relevanceScore": 2}}"#),
                "relevanceScore must be between 0 and 1"
            ),
            (
                requestJSON(requestId: "r", service: "neotrips", content: #"{"body": "x", "android": {"mode": "both"}}"#),
                "android.mode must be data or notification"
            ),
            (requestJSON(requestId: "r", service: "neotrips", validUntil: Self.now.addingTimeInterval(-60).iso), "validUntil is in the past"),
            (
                requestJSON(requestId: "r", service: "neotrips", validUntil: future, sendAt: Self.now.addingTimeInterval(7200).iso),
                "validUntil must be after sendAt"
            ),
            (requestJSON(requestId: "r", service: "neotrips", validUntil: Self.now.addingTimeInterval(40 * 86400).iso), "more than 28 days"),
            (
                #"{"type": "DeliveryRequested", "version": 1, "requestId": "r", "service": "neotrips", "audience": {"all": true}, "content": {"body": "x"}, "validUntil": "tomorrow"}"#,
                "invalid value at validUntil"
            ),
            (requestJSON(requestId: "r", service: "neotrips", throttle: 0), "throttle.perSecond must be between"),
        ]
        for (json, expected) in cases {
            let reason = reason(json)
            #expect(reason?.contains(expected) == true, "\(json) -> \(reason ?? "accepted"), expected \(expected)")
        }
        #expect(
            reason(requestJSON(requestId: "r", service: "neotrips"), service: PlanningService(serviceId: UUID(), name: "neotrips", apps: []))
                == "service 'neotrips' has no apps")
    }

    @Test("priority: absent is bulk, transactional and bulk are kept, anything else is rejected naming the value (also by the admin API's check)")
    func priority() throws {
        func accepted(_ priority: String?) throws -> DeliveryAccepted {
            let request = try DeliveryRequestValidator.parse(Array(requestJSON(requestId: "r", service: "neotrips", priority: priority).utf8))
            return try DeliveryRequestValidator.validate(request, service: Self.service, now: Self.now, deliveryId: "1")
        }
        #expect(try accepted(nil).priority == .bulk)
        #expect(try accepted(nil).lane == .bulk)
        #expect(try accepted("bulk").priority == .bulk)
        #expect(try accepted("transactional").priority == .transactional)
        let urgent = requestJSON(requestId: "r", service: "neotrips", priority: "urgent")
        #expect(reason(urgent) == "priority must be transactional or bulk, got 'urgent'")
        let request = try DeliveryRequestValidator.parse(Array(urgent.utf8))
        #expect(
            DeliveryRequestValidator.problems(of: request, service: Self.service, now: Self.now) == ["priority must be transactional or bulk, got 'urgent'"])
        // An event written before lanes has no priority: its delivery is bulk.
        var old = try accepted("transactional")
        old.priority = nil
        let decoded = try EventJSON.decoder.decode(DeliveryAccepted.self, from: EventJSON.encoder.encode(old))
        #expect(decoded.lane == .bulk)
    }

    @Test("a silent push needs no body; the requestId of a rejected record is kept when readable")
    func silentAndRequestId() throws {
        #expect(reason(requestJSON(requestId: "r", service: "neotrips", content: #"{"ios": {"contentAvailable": true}, "android": {"mode": "data"}}"#)) == nil)
        do {
            _ = try DeliveryRequestValidator.parse(Array(#"{"type": "DeliveryRequested", "version": 1, "requestId": "crm-9", "service": 5}"#.utf8))
            Issue.record("accepted")
        } catch {
            #expect(error.requestId == "crm-9")
        }
    }
}

@Suite("Payloads per platform")
struct MessageFactoryTests {
    let ios = DeliveryRequestValidationTests.ios
    let android = DeliveryRequestValidationTests.android

    func factory(_ content: DeliveryRequest.Content, validFor: TimeInterval = 3600) throws -> (MessageFactory, DeliveryAccepted) {
        let now = Date()
        let delivery = DeliveryAccepted(
            deliveryId: "2026", requestId: "r", serviceId: UUID(), serviceName: "s", apps: [ios.reference, android.reference],
            audience: .everyone, content: content, validUntil: now.addingTimeInterval(validFor), sendAt: now, throttlePerSecond: nil, acceptedAt: now
        )
        return (try MessageFactory(delivery: delivery, apps: [ios, android]), delivery)
    }

    func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test("APNs: aps with every option, _mId and _dId as strings, declared variables beside aps, headers")
    func apns() throws {
        let (factory, delivery) = try factory(
            .init(
                title: "Hi {{userKey}}", subtitle: "Sub", body: "Body {{param.city|nowhere}} \"quoted\"\n",
                variables: ["url": "https://x/{{param.city}}", "deepLink": "app://y"],
                ios: .init(
                    badge: 3, sound: "default", category: "image", threadId: "trips", mutableContent: true, contentAvailable: false,
                    interruptionLevel: "time-sensitive", relevanceScore: 0.5, collapseId: "offer-42")
            ))
        let subscription = TargetedSubscription(appId: ios.appId, registrationToken: "abcd", userKey: "ana", params: ["city": "Lisbon"])
        guard case .apns(let message) = factory.message(for: subscription, plannedAt: Date()) else {
            Issue.record("not an APNs message")
            return
        }
        let payload = try json(message.payload)
        let aps = try #require(payload["aps"] as? [String: Any])
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect(alert["title"] as? String == "Hi ana")
        #expect(alert["subtitle"] as? String == "Sub")
        #expect(alert["body"] as? String == "Body Lisbon \"quoted\"\n")
        #expect(aps["badge"] as? Int == 3)
        #expect(aps["sound"] as? String == "default")
        #expect(aps["category"] as? String == "image")
        #expect(aps["thread-id"] as? String == "trips")
        #expect(aps["mutable-content"] as? Int == 1)
        #expect(aps["content-available"] == nil)
        #expect(aps["interruption-level"] as? String == "time-sensitive")
        #expect(aps["relevance-score"] as? Double == 0.5)
        #expect(payload["_mId"] as? String == "7", "the broadLog id, in decimal")
        #expect(payload["_dId"] as? String == delivery.deliveryId)
        #expect(payload["url"] as? String == "https://x/Lisbon")
        #expect(payload["deepLink"] == nil, "deepLink is not declared by the iOS app")
        #expect(message.pushType == "alert")
        #expect(message.priority == 10)
        #expect(message.collapseId == "offer-42")
        #expect(message.topic == "com.example.trips")
        #expect(message.validUntil == delivery.validUntil)
        #expect(message.messageId == MessageIdentity.messageId(deliveryId: delivery.deliveryId, appId: ios.appId, registrationToken: "abcd"))
    }

    @Test("APNs silent push: background push type, priority 5, content-available only")
    func silent() throws {
        let (factory, _) = try factory(.init(ios: .init(badge: 1, sound: "default", contentAvailable: true)))
        guard case .apns(let message) = factory.message(for: .init(appId: ios.appId, registrationToken: "ab", userKey: "", params: [:]), plannedAt: Date())
        else {
            Issue.record("not APNs")
            return
        }
        #expect(message.pushType == "background")
        #expect(message.priority == 5)
        let aps = try #require(try json(message.payload)["aps"] as? [String: Any])
        #expect(aps["content-available"] as? Int == 1)
        #expect(aps["alert"] == nil && aps["sound"] == nil && aps["badge"] == nil)
    }

    @Test("FCM data message: _msg, title and variables as strings, android priority, ttl from validUntil, collapse key")
    func fcmData() throws {
        let (factory, delivery) = try factory(
            .init(
                title: "T {{userKey}}", body: "B", variables: ["url": "u", "deepLink": "d"],
                android: .init(priority: "normal", channelId: "trips", collapseKey: "c")), validFor: 7200)
        guard
            case .fcm(let message) = factory.message(for: .init(appId: android.appId, registrationToken: "tok", userKey: "bo", params: [:]), plannedAt: Date())
        else {
            Issue.record("not FCM")
            return
        }
        let body = try json(message.message)
        #expect(body["token"] as? String == "tok")
        let data = try #require(body["data"] as? [String: String])
        #expect(
            data == ["_mId": "7", "_dId": delivery.deliveryId, "_msg": "B", "title": "T bo", "url": "u", "deepLink": "d"])
        #expect(body["notification"] == nil)
        let androidConfig = try #require(body["android"] as? [String: Any])
        #expect(androidConfig["priority"] as? String == "normal")
        #expect(androidConfig["collapse_key"] as? String == "c")
        let ttl = try #require(androidConfig["ttl"] as? String)
        #expect(["7199s", "7200s"].contains(ttl))
        #expect(message.projectId == "example")
    }

    @Test("APNs: a critical-alert sound dictionary; a badge-only and a sound-only notification are alerts without alert text")
    func apnsSoundsAndBadges() throws {
        let device = TargetedSubscription(appId: ios.appId, registrationToken: "ab", userKey: "", params: [:])
        let (critical, _) = try factory(.init(body: "Gate changed", ios: .init(sound: .dictionary(name: "chime.caf", critical: true, volume: 0.8))))
        guard case .apns(let alert) = critical.message(for: device, plannedAt: Date()) else { throw CancellationError() }
        #expect(alert.payload.contains(#""sound":{"critical":1,"name":"chime.caf","volume":0.8}"#), "\(alert.payload)")

        let (badgeOnly, _) = try factory(.init(ios: .init(badge: 4)))
        guard case .apns(let badge) = badgeOnly.message(for: device, plannedAt: Date()) else { throw CancellationError() }
        let aps = try #require(try json(badge.payload)["aps"] as? [String: Any])
        #expect(aps["badge"] as? Int == 4 && aps["alert"] == nil && aps.count == 1, "\(badge.payload)")
        #expect(badge.pushType == "alert" && badge.priority == 10)

        let (soundOnly, _) = try factory(.init(ios: .init(sound: "default")))
        guard case .apns(let sound) = soundOnly.message(for: device, plannedAt: Date()) else { throw CancellationError() }
        #expect(try json(sound.payload)["aps"] as? [String: String] == ["sound": "default"])
        #expect(sound.pushType == "alert")
    }

    @Test("FCM: notification options in android.notification; in data mode the subtitle is a data key beside the title")
    func fcmOptions() throws {
        let device = TargetedSubscription(appId: android.appId, registrationToken: "tok", userKey: "", params: [:])
        let (notification, _) = try factory(
            .init(
                title: "T", subtitle: "S", body: "B",
                android: .init(
                    mode: "notification", channelId: "trips", image: "https://example.com/a.png", icon: "ic_trip", color: "#1a2b3c", sound: "default",
                    tag: "offer", clickAction: "OPEN_TRIP")))
        guard case .fcm(let shown) = notification.message(for: device, plannedAt: Date()) else { throw CancellationError() }
        let body = try json(shown.message)
        #expect(body["notification"] as? [String: String] == ["title": "T", "body": "B"], "no subtitle in an FCM notification")
        #expect(
            (body["android"] as? [String: Any])?["notification"] as? [String: String] == [
                "channel_id": "trips", "image": "https://example.com/a.png", "icon": "ic_trip", "color": "#1a2b3c", "sound": "default", "tag": "offer",
                "click_action": "OPEN_TRIP",
            ])

        let (data, _) = try factory(.init(title: "T", subtitle: "S", body: "B"))
        guard case .fcm(let quiet) = data.message(for: device, plannedAt: Date()) else { throw CancellationError() }
        let fields = try #require(try json(quiet.message)["data"] as? [String: String])
        #expect(fields["title"] == "T" && fields["subtitle"] == "S" && fields["_msg"] == "B")
    }

    @Test("FCM notification message: notification title/body, channel, ids still in data")
    func fcmNotification() throws {
        let (factory, _) = try factory(.init(title: "T", body: "B", android: .init(mode: "notification", channelId: "trips")))
        guard case .fcm(let message) = factory.message(for: .init(appId: android.appId, registrationToken: "tok", userKey: "", params: [:]), plannedAt: Date())
        else {
            Issue.record("not FCM")
            return
        }
        let body = try json(message.message)
        #expect(body["notification"] as? [String: String] == ["title": "T", "body": "B"])
        #expect((body["data"] as? [String: String])?["_msg"] == nil)
        #expect((body["data"] as? [String: String])?["_mId"] == "7")
        #expect(((body["android"] as? [String: Any])?["notification"] as? [String: String]) == ["channel_id": "trips"])
    }

    @Test("a payload over 4096 bytes fails soft with payload-too-large; an FCM reserved key fails soft with reserved-key")
    func limits() throws {
        let long = String(repeating: "é", count: 2100)  // 4200 bytes
        let (factory, _) = try factory(.init(body: "{{param.text}}"))
        for app in [ios, android] {
            let big = factory.message(for: .init(appId: app.appId, registrationToken: "ab", userKey: "", params: ["text": long]), plannedAt: Date())
            guard case .failed(let failure) = big else {
                Issue.record("\(app.platform): sent")
                continue
            }
            #expect(failure.failureType == "soft")
            #expect(failure.reason == "payload-too-large")
            let small = factory.message(for: .init(appId: app.appId, registrationToken: "ab", userKey: "", params: ["text": "short"]), plannedAt: Date())
            if case .failed = small { Issue.record("\(app.platform): a short payload failed") }
        }
        let reservedApp = PlanningApp(
            appId: UUID(), integrationKey: "r", platform: .android, environment: "production", bundleId: nil, fcmProjectId: "p", variables: ["google.c.a.e"],
            credential: nil)
        let now = Date()
        let delivery = DeliveryAccepted(
            deliveryId: "d", requestId: "r", serviceId: UUID(), serviceName: "s", apps: [reservedApp.reference], audience: .everyone,
            content: .init(body: "x", variables: ["google.c.a.e": "1"]), validUntil: now.addingTimeInterval(60), sendAt: now, throttlePerSecond: nil,
            acceptedAt: now)
        let reserved = try MessageFactory(delivery: delivery, apps: [reservedApp]).message(
            for: .init(appId: reservedApp.appId, registrationToken: "t", userKey: "", params: [:]), plannedAt: now)
        guard case .failed(let failure) = reserved else {
            Issue.record("sent with a reserved key")
            return
        }
        #expect(failure.reason == "reserved-key")
    }

    @Test("the rate limiter never lets more than perSecond through in any one-second window")
    func rateLimiter() async throws {
        var limiter = FanOutRateLimiter(perSecond: 50)
        var times: [ContinuousClock.Instant] = []
        for _ in 0..<15 {
            try await limiter.acquire(limiter.sliceSize)
            times += Array(repeating: ContinuousClock.now, count: limiter.sliceSize)
        }
        for (index, time) in times.enumerated() {
            let inWindow = times[index...].prefix { $0 < time + .seconds(1) }.count
            #expect(inWindow <= 50)
        }
        #expect(times.last! - times.first! >= .milliseconds(1_300), "75 records at 50/s are spread over about 1.4 s")
    }
}

@Suite("The contract's published examples")
struct ContractExampleTests {
    @Test("every docs/examples/delivery-request-*.json is read by the planner")
    func examplesParse() throws {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let directory = root.appendingPathComponent("docs/examples")
        let files = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.hasPrefix("delivery-request-") && $0.hasSuffix(".json") }
        #expect(files.count >= 3)
        for file in files {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(file)))
            let request = try DeliveryRequestValidator.parse(bytes)
            #expect(request.version == 1, "\(file)")
        }
    }
}

extension MessageFactory {
    /// The message for one device as the fan-out builds it, with broadLog id `broadLogId` (7
    /// unless a test needs another).
    func message(for subscription: TargetedSubscription, plannedAt: Date, broadLogId: Int32 = 7) -> PlannedMessage? {
        message(for: subscription, messageId: messageId(for: subscription), broadLogId: broadLogId, plannedAt: plannedAt)
    }
}
