import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushRegistration
import PushRuntime
import PushTestSupport
import Testing

/// Erasure through the real registration service and broker: registrations sealed
/// under per-person data keys, a person erased by the admin API and an anonymous device by
/// `pushctl users erase`, their log rows gone with the indicators' counts kept, the audit event
/// naming nobody, a rebuild by `pushctl projections replay` without them, and no byte of any of
/// the service's topics holding their tokens or user key.
@Suite("Erasure: a person forgotten for good", .serialized)
struct ErasureTests {
    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let bytes = Array(needle.utf8)
        guard !bytes.isEmpty, haystack.count >= bytes.count else { return false }
        for start in 0...(haystack.count - bytes.count) where haystack[start] == bytes[0] {
            if Array(haystack[start..<(start + bytes.count)]) == bytes { return true }
        }
        return false
    }

    /// Every byte of every record (key, value, header names and values) of the run's topics.
    static func topicBytes(_ h: RegistrationHarness) async throws -> (records: Int, bytes: [UInt8]) {
        var all: [UInt8] = []
        var count = 0
        for topic in [h.configuration.topics.subscriptions.name, h.configuration.topics.catalog.name] {
            for name in [topic, "\(topic).dlq"] {
                for record in try await h.records(name) {
                    count += 1
                    all += record.key ?? []
                    all += record.value
                    for header in record.headers {
                        all += Array(header.name.utf8)
                        all += header.value ?? []
                    }
                    all.append(0)
                }
            }
        }
        return (count, all)
    }

    @Test(
        "a person and an anonymous device erased: rows, data keys and log rows gone, indicators kept, an audit event naming nobody, a pushctl replay rebuilds without them, no topic byte names them"
    )
    func eraseReplayScan() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let alice = "alice-\(suffix)"
        let bob = "bob-\(suffix)"
        let (phone, tablet, anonymous, bobs) = (
            RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(),
            RegistrationEndpointTests.hexToken()
        )
        // Alice's old phone: registered, then purged from quarantine (its subscription gone),
        // its log rows still there.
        let oldPhone = RegistrationEndpointTests.hexToken()
        // An anonymous device purged the same way, erased afterwards by its token.
        let anonymousOld = RegistrationEndpointTests.hexToken()
        let (app, live) = try await RegistrationHarness.run(suffix: suffix) { h in
            let app = try await h.defineApp(platform: .ios)
            let service = try await h.serviceName(of: app.appId)
            for (token, user) in [(phone, alice), (tablet, alice), (anonymous, ""), (bobs, bob), (oldPhone, alice), (anonymousOld, "")] {
                let body = DeviceAdminTests.body(key: app.integrationKey, token: token, userKey: user)
                #expect(try await h.post("/nms/mobile/1/registerIOS.jssp", body: body).status == 200)
            }
            try await eventually("registered") {
                try await h.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(app.appId)") == 6
            }
            // What the quarantine purge leaves of the old phone and the old anonymous device: no subscription.
            try await h.postgres.query("DELETE FROM push.subscriptions WHERE registration_token IN (\(oldPhone), \(anonymousOld))", logger: h.logger)
            #expect(
                try await h.count("SELECT count(*)::int FROM push.subject_keys WHERE subject IN (\("user:\(alice)"), \("user:\(bob)"))") == 2,
                "one data key per person")
            #expect(try await h.admin("POST", "/services/\(service)/unsubscribe", json: #"{"registrationToken": "\#(tablet)"}"#).status == 200)

            // What the planning and tracking projections would hold of a delivery to them.
            let delivery = "erase-\(suffix)"
            let messages = [
                (phone, UUID(), Int32.random(in: 1_000...1_000_000)), (anonymous, UUID(), 7), (bobs, UUID(), 8), (oldPhone, UUID(), 9),
                (anonymousOld, UUID(), 10),
            ]
            for (token, message, broadLogId) in messages {
                try await h.postgres.query(
                    """
                    INSERT INTO push.broad_log (message_id, broad_log_id, delivery_id, app_id, registration_token, token_digest, platform, status, attempts, created_at,
                                                updated_at, sent_at, log_month)
                    VALUES (\(message), \(broadLogId), \(delivery), \(app.appId), \(token), push.token_digest(\(token)), 'ios', 'sent', 1, now(), now(), now(),
                            date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                    """, logger: h.logger)
                try await h.postgres.query(
                    """
                    INSERT INTO push.tracking_log (tracking_id, message_id, message_id_form, broad_log_id, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset)
                    VALUES (\(UUID()), \(String(broadLogId)), 'decimal', \(broadLogId), \(delivery), 1, 'received', now(), 0, \(Int64(broadLogId)))
                    """, logger: h.logger)
                try await h.postgres.query(
                    "INSERT INTO push.tracking_firsts (delivery_id, message_id, kind, first_at) VALUES (\(delivery), \(String(broadLogId)), 'received', now())",
                    logger: h.logger)
            }
            try await h.postgres.query(
                """
                INSERT INTO push.exclusion_log (delivery_id, app_id, token_digest, registration_token, platform, reason, excluded_at, log_month)
                VALUES (\(delivery), \(app.appId), push.token_digest(\(tablet)), NULL, 'ios', 'unsubscribed', now(), date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                """, logger: h.logger)
            try await h.postgres.query(
                "INSERT INTO push.delivery_indicator_counts (delivery_id, to_deliver, excluded, sent, impressions) VALUES (\(delivery), 3, 1, 3, 3)",
                logger: h.logger)

            // The person, by the admin API.
            let erased = try await h.admin("POST", "/services/\(service)/erase", json: #"{"userKey": "\#(alice)"}"#)
            #expect(erased.status == 200, "\(erased.body)")
            let answer = try UnsubscribeTests.object(erased)
            #expect(answer["subscriptions"] as? Int == 2 && answer["dataKeys"] as? Int == 1, "\(erased.body)")
            #expect(
                answer["broadLogRows"] as? Int == 2 && answer["exclusionLogRows"] as? Int == 1 && answer["trackingLogRows"] as? Int == 2,
                "the purged old phone's rows too: \(erased.body)")
            #expect(
                try await h.count(
                    "SELECT count(*)::int FROM push.subject_devices WHERE app_id = \(app.appId) AND token_digest = ANY(\([phone, tablet, oldPhone].map(PersonalDataKeys.tokenDigest)))"
                ) == 0, "her devices are forgotten")
            #expect(try await h.admin("POST", "/services/\(service)/erase", json: #"{"userKey": "\#(alice)"}"#).status == 404, "nothing left of her")
            let owned = try await h.admin("POST", "/services/\(service)/erase", json: #"{"registrationToken": "\#(bobs)"}"#)
            #expect(owned.status == 409 && owned.body.contains("erase the person by userKey"), "\(owned.body)")
            #expect(try await h.admin("POST", "/services/\(service)/erase", json: "{}").status == 400)

            // The anonymous device, by pushctl.
            var environment = TestStack.environment
            environment["PUSH_ADMIN_TOKEN"] = RegistrationHarness.adminToken
            let pushctl = try await BuiltExecutable.run(
                "pushctl", arguments: ["users", "erase", "--url", h.baseURL.absoluteString, "--service", service, "--token", anonymous],
                environment: environment)
            #expect(pushctl.status == 0 && pushctl.output.contains("\"subscriptions\" : 1"), "\(pushctl.output)")
            // The purged anonymous device, by its token: found through its own data key.
            let purged = try UnsubscribeTests.object(
                try await h.admin("POST", "/services/\(service)/erase", json: #"{"registrationToken": "\#(anonymousOld)"}"#))
            #expect(purged["subscriptions"] as? Int == 0 && purged["dataKeys"] as? Int == 1, "\(purged)")
            #expect(purged["broadLogRows"] as? Int == 1 && purged["trackingLogRows"] as? Int == 1, "its log rows: \(purged)")
            #expect(try await h.admin("POST", "/services/\(service)/erase", json: #"{"registrationToken": "\#(anonymousOld)"}"#).status == 404)

            #expect(try await h.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(app.appId)") == 1, "bob's device only")
            #expect(
                try await h.count(
                    "SELECT count(*)::int FROM push.subject_keys WHERE subject IN (\("user:\(alice)"), \(PersonalDataKeys.subject(userKey: "", appId: app.appId, tokenDigest: PersonalDataKeys.tokenDigest(anonymous))))"
                ) == 0, "their data keys destroyed")
            #expect(try await h.count("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(delivery)") == 1)
            #expect(try await h.count("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(delivery) AND registration_token = \(bobs)") == 1)
            #expect(try await h.count("SELECT count(*)::int FROM push.exclusion_log WHERE delivery_id = \(delivery)") == 0)
            #expect(try await h.count("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(delivery)") == 1)
            #expect(try await h.count("SELECT count(*)::int FROM push.tracking_firsts WHERE delivery_id = \(delivery)") == 1)
            #expect(
                try await h.count(
                    "SELECT (to_deliver + excluded + sent + impressions)::int FROM push.delivery_indicator_counts WHERE delivery_id = \(delivery)")
                    == 3 + 1 + 3 + 3, "the indicators keep their counts")

            // The audit: three events that name nobody.
            let records = try await h.records(h.configuration.topics.subscriptions.name)
            let audits = records.filter { Self.contains($0.value, "\"PersonErased\"") }
            #expect(audits.count == 3)
            for audit in audits {
                for secret in [alice, phone, tablet, anonymous, PersonalDataKeys.tokenDigest(phone), PersonalDataKeys.tokenDigest(anonymous)] {
                    #expect(!Self.contains(audit.value, secret) && !Self.contains(audit.key ?? [], secret), "the audit event names nobody")
                }
            }

            // Nothing readable about them on the topics; bob's record keys (his token's digest)
            // are found, so the scan does read keys.
            let (count, bytes) = try await Self.topicBytes(h)
            #expect(count >= 9, "two catalog records, four registrations, an unsubscription, two audits")
            for (what, secret) in [
                ("alice's user key", alice), ("her phone", phone), ("her tablet", tablet), ("her old phone", oldPhone), ("the anonymous device", anonymous),
                ("the purged anonymous device", anonymousOld),
            ] {
                #expect(!Self.contains(bytes, secret), "\(what) in the topics' bytes")
            }
            #expect(!Self.contains(bytes, bobs) && !Self.contains(bytes, bob), "bob's personal fields are sealed as well")
            #expect(Self.contains(bytes, PersonalDataKeys.tokenDigest(bobs)), "the scan reads record keys")
            return (app.appId, try await RegistrationResilienceTests.snapshot(h, apps: [app.appId]))
        }
        #expect(live.count == 1)

        // The rebuild: the projection's rows and positions thrown away, then
        // `pushctl projections replay` from the beginning of push.subscriptions.
        let group = "test.subscriptions-projection.\(suffix)"
        let configuration = try RuntimeConfiguration(service: "registration-tests", defaultOpsPort: 0)
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: Logger(label: "rebuild"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            try await postgres.query("DELETE FROM push.subscriptions WHERE app_id = \(app)")
            try await postgres.query("DELETE FROM push.consumer_offsets WHERE group_id = \(group)")
            var environment = TestStack.environment
            environment["PUSH_TOPIC_SUBSCRIPTIONS"] = "test.subscriptions.\(suffix)"
            environment["PUSH_TOPIC_CATALOG"] = "test.catalog.\(suffix)"
            environment["REGISTRATION_SUBSCRIPTIONS_GROUP"] = group
            let replay = try await BuiltExecutable.run(
                "pushctl", arguments: ["projections", "replay", "--only", "subscriptions", "--quiet-ms", "1000", "--timeout", "120"], environment: environment)
            #expect(replay.status == 0 && replay.output.contains("replay: caught up"), "\(replay.output)")
            let rows = try await postgres.query(
                "SELECT (to_jsonb(s) - 'updated_at')::text FROM push.subscriptions s WHERE app_id = \(app) ORDER BY app_id, registration_token")
            var rebuilt: [String] = []
            for try await row in rows.decode(String.self) { rebuilt.append(row) }
            #expect(rebuilt == live, "the rebuild holds bob's device only, as live")
            tasks.cancelAll()
        }
    }
}
