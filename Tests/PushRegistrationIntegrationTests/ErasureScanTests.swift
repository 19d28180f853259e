import Foundation
import Kafka
import PostgresNIO
import PushEvents
import PushRegistration
import PushTestSupport
import Testing

/// Erasure without gaps: a person one of whose devices was quarantined and purged before the
/// request (its subscription gone, its log rows left), erased through the admin API; then every
/// table and view of schema `push` (the event journal among them, fed by `pushctl journal` from
/// the run's topics) and every record of the run's topics is searched for the person's user key
/// and tokens, as text and as the hex of their bytes. In a database of its own: the purge acts on
/// every quarantined device of a deployment.
@Suite("Erasure after a quarantine purge: no table, topic or journal row names the person", .serialized)
struct ErasureScanTests {
    /// The relations of schema `push` whose rows, as text, contain one of `needles` (plain, or
    /// as the lowercase hex of their UTF-8 bytes, which is how a `bytea` column reads).
    static func relationsNaming(_ needles: [String], postgres: PostgresClient, logger: Logger) async throws -> (scanned: Int, naming: [String]) {
        let relations = try await postgres.query(
            """
            SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'push' AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY c.relname
            """, logger: logger)
        var names: [String] = []
        for try await name in relations.decode(String.self) { names.append(name) }
        let patterns = needles.flatMap { needle in
            ["%\(needle)%", "%\(Array(needle.utf8).map { String(format: "%02x", $0) }.joined())%"]
        }
        var naming: [String] = []
        for name in names {
            // The relation's name comes from the catalog, quoted as an identifier.
            let quoted = "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            var query = PostgresQuery(unsafeSQL: "SELECT count(*)::int FROM push.\(quoted) AS r WHERE r::text LIKE ANY($1)")
            query.binds.append(patterns)
            let rows = try await postgres.query(query, logger: logger)
            for try await count in rows.decode(Int.self) where count > 0 { naming.append("\(name) (\(count) rows)") }
        }
        return (names.count, naming)
    }

    @Test("a person with a device purged from quarantine, erased: no table, view, journal row or topic record names her user key or her tokens")
    func scanAfterPurge() async throws {
        let database = try ScratchDatabase.create(prefix: "push_test_erasure_scan")
        defer { database.drop() }
        try await RegistrationHarness.migrate(database)
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let carol = "carol-\(suffix)@example.com"
        let dave = "dave-\(suffix)@example.com"
        let (phone, oldPhone, daves) = (RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken())
        try await RegistrationHarness.run(suffix: suffix, environment: ["POSTGRES_URL": database.url]) { h in
            let app = try await h.defineApp(platform: .ios)
            let service = try await h.serviceName(of: app.appId)
            for (token, user) in [(phone, carol), (oldPhone, carol), (daves, dave)] {
                let body = DeviceAdminTests.body(key: app.integrationKey, token: token, userKey: user)
                #expect(try await h.post("/nms/mobile/1/registerIOS.jssp", body: body).status == 200)
            }
            try await eventually("registered") {
                try await h.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(app.appId)") == 3
            }

            // Her old phone: refused by APNs (the senders' SubscriptionDisabled), then purged by the
            // registration's purge job (SubscriptionPurged): its subscription is gone.
            try await h.disable(appId: app.appId, token: oldPhone, reason: "Unregistered", invalidSince: Date())
            try await eventually("quarantined") { try await h.subscription(appId: app.appId, token: oldPhone)?["disabled"] == "true" }
            try await Task.sleep(for: .milliseconds(1_500))  // quarantined for longer than the purge delay below
            try await QuarantinePurgeTests.purge(h, after: .seconds(1))
            try await eventually("purged") { try await h.subscription(appId: app.appId, token: oldPhone) == nil }

            // What a delivery to both of her devices and to dave's left in the planner's and the
            // tracking service's tables, as they write it.
            let delivery = String(Int32.random(in: 1_000_000_000...Int32.max))
            for (index, token) in [phone, oldPhone, daves].enumerated() {
                let broadLogId = Int32(100 + index)
                try await h.postgres.query(
                    """
                    INSERT INTO push.broad_log (message_id, broad_log_id, delivery_id, app_id, registration_token, token_digest, platform, status, attempts, created_at,
                                                updated_at, sent_at, log_month)
                    VALUES (\(UUID()), \(broadLogId), \(delivery), \(app.appId), \(token), push.token_digest(\(token)), 'ios', 'sent', 1, now(), now(), now(),
                            date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                    """, logger: h.logger)
                try await h.postgres.query(
                    """
                    INSERT INTO push.tracking_log (tracking_id, message_id, message_id_form, broad_log_id, delivery_id, tag_id, kind, occurred_at, kafka_partition, kafka_offset)
                    VALUES (\(UUID()), \(String(broadLogId)), 'decimal', \(broadLogId), \(delivery), 2, 'opened', now(), 0, \(Int64(broadLogId)))
                    """, logger: h.logger)
            }
            try await h.postgres.query(
                """
                INSERT INTO push.exclusion_log (delivery_id, app_id, token_digest, registration_token, platform, reason, excluded_at, log_month)
                VALUES (\(delivery), \(app.appId), push.token_digest(\(oldPhone)), \(oldPhone), 'ios', 'quarantined', now(), date_trunc('month', now() AT TIME ZONE 'UTC')::date)
                """, logger: h.logger)

            let erased = try await h.admin("POST", "/services/\(service)/erase", json: #"{"userKey": "\#(carol)"}"#)
            #expect(erased.status == 200, "\(erased.body)")
            let answer = try UnsubscribeTests.object(erased)
            #expect(answer["subscriptions"] as? Int == 1, "the live phone's subscription: \(erased.body)")
            #expect(
                answer["broadLogRows"] as? Int == 2 && answer["exclusionLogRows"] as? Int == 1 && answer["trackingLogRows"] as? Int == 2,
                "the purged phone's log rows too: \(erased.body)")

            // The opt-in journal of the run's topics, as an operator would run it.
            let topics = [h.configuration.topics.subscriptions.name, h.configuration.topics.catalog.name, h.configuration.topics.audit.name]
            var records: [KafkaConsumerRecord] = []
            for topic in topics { records += try await h.records(topic) }
            var environment = TestStack.environment
            environment["POSTGRES_URL"] = database.url
            let journal = try BuiltExecutable(
                "pushctl", arguments: ["journal", "--group", "test.journal.\(suffix)"] + topics.flatMap { ["--topic", $0] }, environment: environment)
            defer { journal.killIfRunning() }
            try await eventually(within: .seconds(60), "every record of the run's topics journaled") {
                try await h.count("SELECT count(*)::int FROM push.event_journal WHERE topic = ANY(\(topics))") == records.count
            }
            await journal.terminate()

            // Every relation of the schema.
            let (scanned, naming) = try await Self.relationsNaming([carol, phone, oldPhone], postgres: h.postgres, logger: h.logger)
            #expect(scanned > 40, "the scan read the schema's relations: \(scanned)")
            #expect(naming.isEmpty, "relations still naming her: \(naming)")
            let (_, daveFound) = try await Self.relationsNaming([daves], postgres: h.postgres, logger: h.logger)
            #expect(
                daveFound.contains { $0.hasPrefix("subscriptions ") } && daveFound.contains { $0.hasPrefix("broad_log") },
                "the scan finds what is there: \(daveFound)")
            #expect(records.count >= 6, "registrations, quarantine, purge, erasure and the catalog's records: \(records.count)")

            // Every record of the run's topics and their dead-letter topics: keys, values, headers.
            var bytes: [UInt8] = []
            for topic in topics.flatMap({ [$0, "\($0).dlq"] }) {
                for record in try await h.records(topic) {
                    bytes += (record.key ?? []) + record.value + record.headers.flatMap { Array($0.name.utf8) + ($0.value ?? []) } + [0]
                }
            }
            for (what, secret) in [("her user key", carol), ("her phone", phone), ("her purged phone", oldPhone)] {
                #expect(!ErasureTests.contains(bytes, secret), "\(what) in the topics' bytes")
            }
            #expect(ErasureTests.contains(bytes, PersonalDataKeys.tokenDigest(daves)), "the scan reads record keys")
        }
    }
}
