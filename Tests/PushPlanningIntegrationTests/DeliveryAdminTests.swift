import Foundation
import PostgresNIO
import PushEvents
import PushPlanning
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The deliveries' admin API against the real planner, broker and database: a request submitted
/// over HTTP is checked at once, previewed without sending, and becomes the delivery the answer
/// named.
@Suite("Deliveries admin API: submit, preview, list, show, pause, resume, cancel", .serialized)
struct DeliveryAdminTests {
    struct Answer {
        var status: Int
        var body: Data
        var json: [String: Any] { (try? JSONSerialization.jsonObject(with: body) as? [String: Any]) ?? [:] }
        var list: [[String: Any]] { (try? JSONSerialization.jsonObject(with: body) as? [[String: Any]]) ?? [] }
    }

    static func call(port: Int, _ method: String, _ path: String, body: String? = nil, token: String? = PlanningHarness.adminToken) async throws -> Answer {
        var request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:\(port)/admin/v1\(path)")))
        request.httpMethod = method
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        if let body {
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(body.utf8)
        }
        request.timeoutInterval = 30
        let (data, response) = try await URLSession.shared.data(for: request)
        return Answer(status: try #require(response as? HTTPURLResponse).statusCode, body: data)
    }

    static func settings(port: Int) -> PlanningSettings {
        var settings = PlanningHarness.testSettings
        settings.adminPort = port
        return settings
    }

    /// The payload with its ids set to the preview's placeholders, and FCM's ttl (seconds left
    /// until validUntil, so smaller when planned later than previewed) left out.
    static func comparable(_ payload: String, deliveryId: String) -> String {
        payload.replacing(#/"_mId":"\d+"/#, with: #""_mId":"0""#).replacing(#""_dId":"\#(deliveryId)""#, with: #""_dId":"0""#)
            .replacing(#/"ttl":"\d+s"/#, with: #""ttl":"-""#)
    }

    @Test("a bad request is a 400 naming every problem and publishes nothing; no token is a 401")
    func refusals() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: Self.settings(port: port)) { h in
            let service = try await h.defineService()
            let broken = requestJSON(
                requestId: "bad-\(h.suffix)", service: service.name, apps: ["no-such-app"],
                content: #"{"title": "T", "body": "{{unclosed"}"#, validUntil: Date(timeIntervalSinceNow: -60).iso)
            let answer = try await Self.call(port: port, "POST", "/deliveries", body: broken)
            #expect(answer.status == 400)
            let problems = try #require(answer.json["problems"] as? [String])
            #expect(problems.contains("unknown app 'no-such-app' in service '\(service.name)'"))
            #expect(problems.contains("validUntil is in the past"))
            #expect(answer.json["error"] as? String == problems.first, "the error is the reason DeliveryRejected would give: the first problem")

            let unknownService = try await Self.call(
                port: port, "POST", "/deliveries", body: requestJSON(requestId: "bad2-\(h.suffix)", service: "nope-\(h.suffix)"))
            #expect(unknownService.status == 400)
            #expect(unknownService.json["error"] as? String == "unknown service 'nope-\(h.suffix)'")

            let notJSON = try await Self.call(port: port, "POST", "/deliveries", body: "{")
            #expect(notJSON.status == 400)
            #expect(notJSON.json["error"] as? String == "the record is not a JSON object")

            let anonymous = try await Self.call(
                port: port, "POST", "/deliveries", body: requestJSON(requestId: "anon-\(h.suffix)", service: service.name), token: nil)
            #expect(anonymous.status == 401)
            let preview = try await Self.call(port: port, "POST", "/deliveries/preview", body: broken)
            #expect(preview.status == 400)
            #expect(try await h.records(h.topics.deliveryRequests.name).isEmpty, "nothing refused or previewed was published")
        }
    }

    @Test(
        "preview counts the audience and renders samples; submit answers the delivery id the planner then uses, once per requestId; list and show give the indicators"
    )
    func previewSubmitAndRead() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: Self.settings(port: port)) { h in
            let service = try await h.defineService()
            let ios = service.apps[0]
            let android = service.apps[1]
            try await h.addSubscriptions(ios, count: 6)
            try await h.addSubscriptions(android, count: 4)
            let quarantined = try await h.token(ios, 2)
            try await h.postgres.query(
                "UPDATE push.subscriptions SET disabled = true, disabled_reason = 'Unregistered', disabled_at = now() WHERE registration_token = \(quarantined)",
                logger: h.logger)
            let requestId = "admin-\(h.suffix)"
            let document = requestJSON(
                requestId: requestId, service: service.name, content: #"{"title": "Lisbon", "body": "Hello {{userKey}} from {{param.city}}"}"#)

            let preview = try await Self.call(port: port, "POST", "/deliveries/preview?samples=2", body: document)
            #expect(preview.status == 200)
            #expect(preview.json["targeted"] as? Int == 9)
            #expect(preview.json["excluded"] as? Int == 1)
            let exclusions = try #require(preview.json["exclusions"] as? [[String: Any]])
            #expect(exclusions.count == 1)
            #expect(exclusions.first?["reason"] as? String == "quarantined: Unregistered")
            let apps = try #require(preview.json["apps"] as? [[String: Any]])
            #expect(apps.first { $0["appId"] as? String == ios.appId.uuidString }?["targeted"] as? Int == 5)
            #expect(apps.first { $0["appId"] as? String == android.appId.uuidString }?["excluded"] as? Int == 0)
            let samples = try #require(preview.json["samples"] as? [[String: Any]])
            #expect(samples.count == 4, "two samples per app")
            #expect(samples.allSatisfy { $0["outcome"] as? String == "send" })
            #expect(samples.allSatisfy { ($0["payload"] as? String)?.contains("from Lisbon") == true }, "personalised")
            #expect(samples.allSatisfy { $0["registrationToken"] as? String != quarantined })
            #expect(try await h.records(h.topics.deliveryRequests.name).isEmpty, "a preview publishes nothing")

            let submitted = try await Self.call(port: port, "POST", "/deliveries", body: document)
            #expect(submitted.status == 202)
            let deliveryId = try #require(submitted.json["deliveryId"] as? String)
            #expect(submitted.json["status"] as? String == "submitted")
            #expect(submitted.json["alreadySubmitted"] as? Bool == false)
            let again = try await Self.call(port: port, "POST", "/deliveries", body: document)
            #expect(again.status == 202)
            #expect(again.json["deliveryId"] as? String == deliveryId, "the same requestId is the same delivery")
            #expect(again.json["alreadySubmitted"] as? Bool == true)

            let planned = try await h.waitPlanned(requestId)
            #expect(planned == deliveryId, "the planner uses the id the answer named")
            #expect(try await h.int("SELECT count(*)::int FROM push.deliveries WHERE request_id = \(requestId)") == 1)

            // What the preview showed is what the devices were sent (the ids apart).
            var sent: [String: String] = [:]
            for record in try await h.messageRecords() {
                let data = try #require((try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])?["data"] as? [String: Any])
                let token = try #require(data["registrationToken"] as? String)
                sent[token] = try #require((data["payload"] ?? data["message"]) as? String)
            }
            #expect(sent.count == 9)
            for sample in samples {
                let token = try #require(sample["registrationToken"] as? String)
                let payload = try #require(sent[token], "sample device \(token) was sent a message")
                #expect(Self.comparable(payload, deliveryId: deliveryId) == Self.comparable(try #require(sample["payload"] as? String), deliveryId: "0"))
            }

            let state = try await Self.call(port: port, "GET", "/delivery-requests/\(requestId)")
            #expect(state.json["state"] as? String == "accepted")
            #expect(state.json["deliveryId"] as? String == deliveryId)

            try await eventually("the deliveries projection shows the delivery planned") {
                let list = try await Self.call(port: port, "GET", "/deliveries?service=\(service.name)")
                return list.list.first?["status"] as? String == "planned"
            }
            let list = try await Self.call(port: port, "GET", "/deliveries?service=\(service.name)&limit=10")
            #expect(list.list.count == 1)
            let indicators = try #require(list.list.first?["indicators"] as? [String: Any])
            #expect(indicators["toDeliver"] as? Int == 9)
            #expect(indicators["excluded"] as? Int == 1)
            #expect(indicators["pending"] as? Int == 9, "no sender runs here: every message waits")

            let detail = try await Self.call(port: port, "GET", "/deliveries/\(deliveryId)")
            #expect(detail.status == 200)
            #expect((detail.json["content"] as? [String: Any])?["title"] as? String == "Lisbon")
            #expect(((detail.json["delivery"] as? [String: Any])?["requestId"] as? String) == requestId)
            #expect(try await Self.call(port: port, "GET", "/deliveries/2000000000").status == 404)
            #expect(try await Self.call(port: port, "GET", "/deliveries?limit=0").status == 400)
            #expect(try await Self.call(port: port, "GET", "/delivery-requests/never-\(h.suffix)").status == 404)
        }
    }

    @Test("pause holds the fan-out and resume continues it; cancel stops it for good with every planned device sent once; 409 and 404 for what cannot be")
    func pauseResumeCancel() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: Self.settings(port: port)) { h in
            let service = try await h.defineService(platforms: ["ios"])
            try await h.addSubscriptions(service.apps[0], count: 20_000)
            let requestId = "controls-\(h.suffix)"
            let submitted = try await Self.call(
                port: port, "POST", "/deliveries", body: requestJSON(requestId: requestId, service: service.name, throttle: 2_000))
            let deliveryId = try #require(submitted.json["deliveryId"] as? String)
            func planned() async throws -> Int { try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") }
            try await eventually("the fan-out under way") { try await planned() >= 1_000 }

            let pause = try await Self.call(port: port, "POST", "/deliveries/\(deliveryId)/pause")
            #expect(pause.status == 202)
            #expect(pause.json["applied"] as? Bool == true)
            #expect(pause.json["state"] as? String == "paused")
            // The chunks being published when paused finish (one per shard in flight, each paced
            // by the throttle, slower on a busy machine): held once no shard has a chunk in flight
            // and two reads a second apart agree.
            func inFlight() async throws -> Int {
                try await h.int("SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(deliveryId) AND pending_chunk IS NOT NULL")
            }
            var held = try await planned()
            for _ in 0..<60 {
                try await Task.sleep(for: .seconds(1))
                let now = try await planned()
                if now == held, try await inFlight() == 0 { break }
                held = now
            }
            try await Task.sleep(for: .seconds(2))
            #expect(try await planned() == held, "nothing more is planned while paused")
            #expect(held < 20_000)

            #expect(try await Self.call(port: port, "POST", "/deliveries/\(deliveryId)/resume").status == 202)
            try await eventually("the fan-out goes on") { try await planned() > held + 1_000 }
            let cancel = try await Self.call(port: port, "POST", "/deliveries/\(deliveryId)/cancel")
            #expect(cancel.status == 202)
            #expect(cancel.json["applied"] as? Bool == true)
            try await eventually("the cancelled delivery is finished") {
                try await h.text("SELECT status FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") == "planned"
            }
            let targeted = try await planned()
            #expect(targeted < 20_000, "cancelled before the end of the audience")
            let messages = try await h.plannedMessages(deliveryId)
            #expect(messages.count == targeted, "DeliveryPlanned counts what was published")
            #expect(Set(messages.map(\.tokenDigest)).count == messages.count, "no device twice")

            #expect(try await Self.call(port: port, "POST", "/deliveries/\(deliveryId)/cancel").status == 202, "cancel again changes nothing")
            let refused = try await Self.call(port: port, "POST", "/deliveries/\(deliveryId)/resume")
            #expect(refused.status == 409)
            #expect(try await Self.call(port: port, "POST", "/deliveries/2000000000/pause").status == 404)
            try await eventually("the list shows the cancel") {
                try await Self.call(port: port, "GET", "/deliveries?service=\(service.name)").list.first?["control"] as? String == "cancelled"
            }
        }
    }

    @Test("a proof reaches only its recipients (user keys and tokens, whatever the audience), is marked as one, and stays out of the list unless asked for")
    func proof() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: Self.settings(port: port)) { h in
            let service = try await h.defineService()
            let (ios, android) = (service.apps[0], service.apps[1])
            try await h.addSubscriptions(ios, count: 10)
            try await h.addSubscriptions(android, count: 10)
            let androidUser5 = try await h.token(android, 5)
            let requestId = "proof-\(h.suffix)"
            var document = requestJSON(requestId: requestId, service: service.name, audience: #"{"where": {"tier": "gold"}}"#)
            document.removeLast()
            document += #", "proof": {"userKeys": ["user3", "nobody"], "registrationTokens": ["\#(androidUser5)"]}}"#
            let expected: Set<String> = [try await h.token(ios, 3), try await h.token(android, 3), androidUser5]

            let preview = try await Self.call(port: port, "POST", "/deliveries/preview", body: document)
            #expect(preview.status == 200)
            #expect(preview.json["proof"] as? Bool == true)
            #expect(preview.json["targeted"] as? Int == 3, "user3 on both apps and one token; the audience's where is not applied")
            #expect(preview.json["unmatchedUserKeys"] as? Int == 1)

            let submitted = try await Self.call(port: port, "POST", "/deliveries", body: document)
            #expect(submitted.status == 202)
            let deliveryId = try await h.waitPlanned(requestId)
            let tokens = try await h.messageRecords().compactMap { record in
                ((try? JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])?["data"] as? [String: Any])?["registrationToken"] as? String
            }
            #expect(Set(tokens) == expected && tokens.count == 3, "only the proof's recipients get it")
            #expect(try await h.text("SELECT proof::text FROM push.deliveries WHERE delivery_id = \(deliveryId)") == "true")
            #expect(try await Self.call(port: port, "GET", "/deliveries?service=\(service.name)").list.isEmpty, "proofs are left out of the list")
            let withProofs = try await Self.call(port: port, "GET", "/deliveries?service=\(service.name)&proofs=true").list
            #expect(withProofs.first?["proof"] as? Bool == true)

            var empty = requestJSON(requestId: "proof-empty-\(h.suffix)", service: service.name)
            empty.removeLast()
            empty += #", "proof": {"userKeys": []}}"#
            let refused = try await Self.call(port: port, "POST", "/deliveries", body: empty)
            #expect(refused.status == 400)
            #expect(refused.json["error"] as? String == "proof must name 1 to 100 recipients (userKeys and registrationTokens together)")
        }
    }

    @Test("a request naming a template gets its content with the request's overrides and the version used; a later version does not change it")
    func template() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: Self.settings(port: port)) { h in
            let service = try await h.defineService(platforms: ["ios"])
            try await h.addSubscriptions(service.apps[0], count: 3)
            func define(_ version: Int, _ content: String) async throws {
                try await h.postgres.query(
                    """
                    INSERT INTO push.templates (service_id, name, version, content, defined_at)
                    SELECT service_id, 'welcome', \(version), \(content)::jsonb, now() FROM push.services WHERE name = \(service.name)
                    """,
                    logger: h.logger)
            }
            try await define(1, #"{"title": "Welcome", "body": "Hello {{userKey}}, v1", "variables": {"url": "https://example.com/v1"}, "ios": {"badge": 1}}"#)
            let unknown = requestJSON(requestId: "tpl-bad-\(h.suffix)", service: service.name, content: "{}").dropLast() + #", "template": {"name": "nope"}}"#
            let refused = try await Self.call(port: port, "POST", "/deliveries", body: String(unknown))
            #expect(refused.status == 400)
            #expect(refused.json["error"] as? String == "unknown template 'nope' in service '\(service.name)'")
            // A version past PostgreSQL's integer range is a version that does not exist, not a database error.
            let huge =
                requestJSON(requestId: "tpl-huge-\(h.suffix)", service: service.name, content: "{}").dropLast()
                + #", "template": {"name": "welcome", "version": 17207639130043402}}"#
            let hugeRefused = try await Self.call(port: port, "POST", "/deliveries", body: String(huge))
            #expect(hugeRefused.status == 400)
            #expect(hugeRefused.json["error"] as? String == "unknown template 'welcome' version 17207639130043402 in service '\(service.name)'")

            let requestId = "tpl-\(h.suffix)"
            let document =
                requestJSON(
                    requestId: requestId, service: service.name, content: #"{"title": "Welcome back", "variables": {"mediaUrl": "https://example.com/m"}}"#,
                    sendAt: Date(timeIntervalSinceNow: 3).iso
                ).dropLast() + #", "template": {"name": "welcome"}}"#
            #expect(try await Self.call(port: port, "POST", "/deliveries", body: String(document)).status == 202)
            try await eventually("accepted") { try await h.deliveryStatus(requestId: requestId) != nil }
            try await define(2, #"{"title": "Changed", "body": "Changed, v2"}"#)  // after acceptance, before the fan-out
            let deliveryId = try await h.waitPlanned(requestId)
            let payloads = try await h.messageRecords().compactMap { record in
                ((try? JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])?["data"] as? [String: Any])?["payload"] as? String
            }
            #expect(payloads.count == 3)
            for payload in payloads {
                #expect(payload.contains(#""title":"Welcome back""#), "the request's title overrides the template's")
                #expect(payload.contains(", v1"), "the body of version 1, the version when accepted: \(payload)")
                #expect(payload.contains(#""url":"https://example.com/v1""#) && payload.contains(#""mediaUrl":"https://example.com/m""#), "variables merged")
                #expect(payload.contains(#""badge":1"#))
            }
            let detail = try await Self.call(port: port, "GET", "/deliveries/\(deliveryId)")
            #expect((detail.json["template"] as? [String: Any])?["version"] as? Int == 1)
            #expect((detail.json["template"] as? [String: Any])?["name"] as? String == "welcome")
        }
    }

    /// docs/deliveries-openapi.json's operations, as "METHOD path".
    static func documentedOperations() throws -> [String: [String: Any]] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("docs/deliveries-openapi.json")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var operations: [String: [String: Any]] = [:]
        for (path, item) in try #require(document["paths"] as? [String: [String: Any]]) {
            for (method, operation) in item where ["get", "post", "put", "delete"].contains(method) {
                operations["\(method.uppercased()) \(path)"] = operation as? [String: Any]
            }
        }
        return operations
    }

    @Test("docs/deliveries-openapi.json lists exactly the routes served, and each answers 401 without the token, as documented")
    func openAPIDocument() async throws {
        let operations = try Self.documentedOperations()
        let served: Set<String> = [
            "POST /admin/v1/deliveries", "GET /admin/v1/deliveries", "POST /admin/v1/deliveries/preview", "GET /admin/v1/deliveries/{deliveryId}",
            "POST /admin/v1/deliveries/{deliveryId}/cancel", "POST /admin/v1/deliveries/{deliveryId}/pause",
            "POST /admin/v1/deliveries/{deliveryId}/resume", "GET /admin/v1/delivery-requests/{requestId}",
        ]
        #expect(Set(operations.keys) == served)
        let port = try EphemeralPort.next()
        // Each operation with the statuses it documents (Sendable, for the harness's closure).
        let documented = operations.mapValues { Set((($0["responses"] as? [String: Any]) ?? [:]).keys.compactMap(Int.init)) }
        try await PlanningHarness.run(settings: Self.settings(port: port)) { h in
            for (entry, statuses) in documented {
                let parts = entry.split(separator: " ").map(String.init)
                let path = parts[1].replacingOccurrences(of: "/admin/v1", with: "").replacingOccurrences(of: "{deliveryId}", with: "1")
                    .replacingOccurrences(of: "{requestId}", with: "r")
                let answer = try await Self.call(port: port, parts[0], path, body: parts[0] == "POST" ? "{}" : nil, token: nil)
                #expect(answer.status == 401 && statuses.contains(401), "\(entry) without a token answered \(answer.status)")
            }
        }
    }
}
