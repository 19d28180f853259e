import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushPlanning
import PushRegistration
import PushStore
import PushTestSupport
import Testing

/// Issue 28: an erased person's `broad_log` and `exclusion_log` rows stay gone. The planner and
/// its projections run in-process, the erasure is the registration service's `PersonErasure`
/// (what `POST /admin/v1/services/{name}/erase` runs), results are published as the senders
/// publish them, and the rebuild is `pushctl projections replay` into an empty database.
@Suite("Erased devices stay out of broad_log and exclusion_log, live and after a replay", .serialized)
struct ErasedDeviceLogTests {
    /// Whether `needle`'s UTF-8 bytes occur in `haystack`.
    static func contains(_ haystack: [UInt8], _ needle: String) -> Bool {
        let pattern = Array(needle.utf8)
        guard !pattern.isEmpty, haystack.count >= pattern.count else { return false }
        return (0...(haystack.count - pattern.count)).contains { start in haystack[start..<(start + pattern.count)].elementsEqual(pattern) }
    }

    @Test(
        "exclusion_log is keyed by token digest: a version-2 exclusion takes its token from push.subscriptions (NULL for a device no longer there), a version-1 one keeps its token, and the same device in both versions is one row"
    )
    func exclusionsByDigest() async throws {
        try await DeliveryIndicatorTests.run { h in
            let (_, apps) = try await h.defineService(platforms: ["ios"])
            let app = apps[0]
            try await h.addSubscriptions(app, count: 1)
            let present = try await h.token(app, 1)
            let (gone, old) = ("gone-\(h.suffix)", "old-\(h.suffix)")
            let deliveryId = "by-digest-\(h.suffix)"
            let at = Date()
            let v2 = DeliveryExclusionsRecorded(
                deliveryId: deliveryId,
                exclusions: [present, gone].map { .init(appId: app.appId, tokenDigest: TokenDigest.of($0), platform: .ios, reason: "unsubscribed") },
                excludedAt: at)
            // An older planner's record of the same chunk (a repeat across the upgrade), plus a
            // device only version 1 names.
            let v1 = DeliveryExclusionsRecordedV1(
                deliveryId: deliveryId,
                exclusions: [present, old].map { .init(appId: app.appId, registrationToken: $0, platform: .ios, reason: "unsubscribed") },
                excludedAt: at)
            try await DeliveryIndicatorTests.publish(
                h,
                [
                    try KafkaProducerRecord(topic: h.topics.deliveryEvents.name, event: EventEnvelope(key: deliveryId, payload: v2)),
                    try KafkaProducerRecord(topic: h.topics.deliveryEvents.name, event: EventEnvelope(key: deliveryId, payload: v1)),
                ])
            try await DeliveryIndicatorTests.waitProjected(h, group: "test.deliveries.\(h.suffix)", topic: h.topics.deliveryEvents.name, count: 2)
            var rows: [String] = []
            for try await row in try await h.postgres.query(
                "SELECT token_digest || ' ' || coalesce(registration_token, 'NULL') FROM push.exclusion_log WHERE delivery_id = \(deliveryId)",
                logger: h.logger
            ).decode(String.self) {
                rows.append(row)
            }
            #expect(
                rows.sorted()
                    == ["\(TokenDigest.of(present)) \(present)", "\(TokenDigest.of(gone)) NULL", "\(TokenDigest.of(old)) \(old)"].sorted())
        }
    }

    @Test(
        "a late result of an erased device's message writes no row; a replay skips the erased devices' messages and exclusions; the person who comes back with the same token is logged again"
    )
    func erasedDevicesAreNotLoggedAgain() async throws {
        try await DeliveryIndicatorTests.run { h in
            let (service, apps) = try await h.defineService(platforms: ["ios"])
            let app = apps[0]
            try await h.addSubscriptions(app, count: 3)
            // user2's device is quarantined: excluded, with an exclusion_log row.
            try await h.postgres.query(
                "UPDATE push.subscriptions SET disabled = true, disabled_reason = 'Unregistered', disabled_at = now() WHERE app_id = \(app.appId) AND user_key = 'user2'",
                logger: h.logger)
            let (erased, quarantined, kept) = (try await h.token(app, 1), try await h.token(app, 2), try await h.token(app, 3))

            let first = "erased-1-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: first, service: service), key: first)
            let before = try await h.waitPlanned(first)
            try await eventually("the first delivery's exclusion logged") {
                try await h.int("SELECT count(*)::int FROM push.exclusion_log WHERE delivery_id = \(before)") == 1
            }
            let messages = try await h.plannedMessages(before)
            #expect(messages.count == 2)
            // Both messages sent before the erasure: each result writes its row.
            let results = try messages.map { m in
                try DeliveryIndicatorTests.result(h, MessageSent(message: m, providerMessageId: "p", attempts: 1, sentAt: Date()), key: m.messageId)
            }
            try await DeliveryIndicatorTests.publish(h, results)
            try await eventually("the first delivery's messages logged") {
                try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(before)") == 2
            }
            // The exclusion came by digest (DeliveryExclusionsRecorded v2); the row has the
            // digest, and the token from push.subscriptions, where the device still is.
            #expect(
                try await h.text("SELECT token_digest || ' ' || registration_token FROM push.exclusion_log WHERE delivery_id = \(before)")
                    == "\(TokenDigest.of(quarantined)) \(quarantined)")

            // The erasure of user1 and user2 (the service's own code path).
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            let erasure = PersonErasure(producer: producer, topic: h.topics.subscriptions.name, postgres: h.postgres, logger: h.logger)
            for user in ["user1", "user2"] { _ = try await erasure.erase(serviceName: service, userKey: user, token: nil) }
            await producer.close()
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(before)") == 1)
            #expect(try await h.int("SELECT count(*)::int FROM push.exclusion_log WHERE delivery_id = \(before)") == 0)

            // The results arrive again after the erasure (a sender's result is at least once):
            // the erased device's does not bring its row back.
            try await DeliveryIndicatorTests.publish(h, results)
            try await eventually("the results projected again") {
                try await h.int(
                    "SELECT coalesce(sum(next_offset), 0)::int FROM push.consumer_offsets WHERE group_id = \("test.broad-log.\(h.suffix)") AND topic = \(h.topics.messageResults.name)"
                )
                    == 4
            }
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(before) AND status = 'sent'") == 1)
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE registration_token = \(erased)") == 0)

            // user1 comes back with the same token (a new registration after the erasure) and is
            // targeted by the next delivery: logged and counted again.
            try await h.postgres.query(
                "INSERT INTO push.subscriptions (app_id, registration_token, platform, user_key, params, registered_at, updated_at) VALUES (\(app.appId), \(erased), 'ios', 'user1', '{}', now(), now())",
                logger: h.logger)
            let second = "erased-2-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: second, service: service), key: second)
            let after = try await h.waitPlanned(second)
            #expect(try await h.plannedMessages(after).count == 2)
            let returning = try #require(try await h.plannedMessages(after).first { $0.tokenDigest == TokenDigest.of(erased) })
            try await DeliveryIndicatorTests.publish(
                h,
                [
                    try DeliveryIndicatorTests.result(
                        h, MessageSent(message: returning, providerMessageId: "p2", attempts: 1, sentAt: Date()), key: returning.messageId)
                ])
            try await eventually("the returning person's message sent") {
                try await h.text("SELECT status FROM push.broad_log WHERE message_id = \(returning.messageId)") == "sent"
            }

            // The delivery events of both deliveries (written by this planner) name no device by
            // its token: the excluded device's digest is there, its token is not.
            let deliveryEvents = try await h.records(h.topics.deliveryEvents.name)
            let exclusionRecords = deliveryEvents.filter { Self.contains($0.value, "DeliveryExclusionsRecorded") }
            #expect(exclusionRecords.count == 1, "the first delivery's one exclusion chunk")
            let bytes = deliveryEvents.flatMap { ($0.key ?? []) + $0.value }
            #expect(Self.contains(bytes, TokenDigest.of(quarantined)), "the scan reads the exclusion records")
            for (what, token) in [("the excluded device", quarantined), ("the erased device", erased), ("the kept device", kept)] {
                #expect(!Self.contains(bytes, token), "\(what)'s token in push.delivery-events")
            }
            // Nor do the message records (sealed, version 2) and the results (by digest, version 2):
            // every byte of them, keys and values, as written.
            var written: [KafkaConsumerRecord] = []
            for topic in h.topics.messageTopics + [h.topics.messageResults] { written += try await h.records(topic.name, openSealed: false) }
            #expect(written.count >= 4, "both deliveries' messages and the results")
            let writtenBytes = written.flatMap { ($0.key ?? []) + $0.value }
            #expect(Self.contains(writtenBytes, TokenDigest.of(erased)), "the scan reads the erased device's records")
            for (what, token) in [("the erased device", erased), ("the kept device", kept)] {
                #expect(!Self.contains(writtenBytes, token), "\(what)'s token in the message or result topics")
            }
            #expect(!Self.contains(writtenBytes, "user1"), "the erased person's user key (in the payload's personalisation, if any)")

            // The rebuild: an empty database with the erased devices restored from the backup
            // (operations.md, "Data protection"), the deliveries replayed, then the broad log.
            let database = "push_test_erased_\(h.suffix)"
            try await h.postgres.query(PostgresQuery(unsafeSQL: "CREATE DATABASE \(database)"), logger: h.logger)
            defer { ProjectionReplayTests.dropLater(database) }
            var environment = try PlanningHarness.environment(suffix: h.suffix)
            environment["POSTGRES_URL"] = try ProjectionReplayTests.url(environment["POSTGRES_URL"], database: database)
            let migrate = try await BuiltExecutable.run("pushctl", arguments: ["migrate"], environment: environment)
            #expect(migrate.status == 0, "\(migrate.output)")
            var settings = h.configuration.postgres
            settings.database = database
            let rebuilt = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: h.logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await rebuilt.run() }
                defer { tasks.cancelAll() }
                var devices: [(UUID, String, Date)] = []
                for try await row in try await h.postgres.query(
                    "SELECT app_id, token_digest, erased_at FROM push.erased_devices WHERE app_id = \(app.appId)", logger: h.logger
                )
                .decode((UUID, String, Date).self) {
                    devices.append(row)
                }
                #expect(devices.count == 2)
                try await rebuilt.query(
                    """
                    INSERT INTO push.erased_devices (app_id, token_digest, erased_at)
                    SELECT * FROM unnest(\(devices.map(\.0))::uuid[], \(devices.map(\.1))::text[], \(devices.map(\.2))::timestamptz[])
                    """,
                    logger: h.logger)
                for only in ["deliveries", "broad-log"] {
                    let replay = try await BuiltExecutable.run(
                        "pushctl", arguments: ["projections", "replay", "--only", only, "--quiet-ms", "1000", "--timeout", "120"], environment: environment)
                    #expect(replay.status == 0 && replay.output.contains("replay: caught up"), "\(replay.output)")
                }
                func rows(_ query: PostgresQuery) async throws -> [String] {
                    var found: [String] = []
                    for try await text in try await rebuilt.query(query, logger: h.logger).decode(String.self) { found.append(text) }
                    return found.sorted()
                }
                // The first delivery: only the kept device; no exclusion (the quarantined device was erased).
                // (By digest: the sealed planned records and the results carry no token, and this
                // rebuild did not replay the subscriptions the tokens would come from.)
                #expect(
                    try await rows("SELECT token_digest || ' ' || status FROM push.broad_log WHERE delivery_id = \(before)") == ["\(TokenDigest.of(kept)) sent"]
                )
                #expect(try await rows("SELECT registration_token FROM push.exclusion_log WHERE delivery_id = \(before)") == [])
                #expect(try await rows("SELECT registration_token FROM push.exclusion_log WHERE registration_token = \(quarantined)") == [])
                #expect(try await rows("SELECT token_digest FROM push.exclusion_log WHERE token_digest = \(TokenDigest.of(quarantined))") == [])
                // The second delivery: the returning person's message, sent (the kept device's,
                // without a result, has no row).
                #expect(
                    try await rows("SELECT token_digest || ' ' || status FROM push.broad_log WHERE delivery_id = \(after)")
                        == ["\(TokenDigest.of(erased)) sent"])
            }
        }
    }

    @Test(
        "a userKeys audience and a proof name nobody on push.delivery-events (version 2: counts) nor in push.deliveries (version 1 counted too); a planned delivery keeps counts; an erasure takes the person out of a plan not planned yet"
    )
    func recipientsCounted() async throws {
        try await DeliveryIndicatorTests.run { h in
            let (service, apps) = try await h.defineService(platforms: ["ios"])
            let app = apps[0]
            try await h.addSubscriptions(app, count: 3)
            let (token1, token2) = (try await h.token(app, 1), try await h.token(app, 2))

            // A list of user keys, planned at once: sent to both, kept as a count once planned.
            let listed = "listed-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: listed, service: service, audience: #"{"userKeys": ["user1", "user3"]}"#), key: listed)
            let planned = try await h.waitPlanned(listed)
            #expect(try await h.int("SELECT targeted::int FROM push.deliveries WHERE delivery_id = \(planned)") == 2)
            #expect(try await h.text("SELECT audience::text FROM push.deliveries WHERE delivery_id = \(planned)") == #"{"userKeyCount": 2}"#)
            #expect(
                try await h.text("SELECT (accepted->'audience')::text FROM push.delivery_plans WHERE delivery_id = \(planned)") == #"{"userKeyCount": 2}"#)

            // A proof due in an hour (so still waiting at the erasure), naming user1 by key and by
            // token, for an audience that names user1 too.
            let proof = "proof-\(h.suffix)"
            var document = requestJSON(
                requestId: proof, service: service, audience: #"{"userKeys": ["user1", "user2"]}"#, sendAt: Date().addingTimeInterval(3600).iso)
            document.removeLast()
            document += #", "proof": {"userKeys": ["user1", "user3"], "registrationTokens": ["\#(token1)", "\#(token2)"]}}"#
            try await h.publishRequest(document, key: proof)
            try await eventually("the proof accepted") { try await h.deliveryStatus(requestId: proof) == "accepted" }
            let waiting = try await h.deliveryId(of: proof)
            #expect(try await h.text("SELECT audience::text FROM push.deliveries WHERE delivery_id = \(waiting)") == #"{"userKeyCount": 2}"#)

            // On the topic: version 2, counts only.
            let accepted = try await h.deliveryEvents().filter { $0["type"] as? String == "DeliveryAccepted" }
            #expect(accepted.count == 2 && accepted.allSatisfy { $0["version"] as? Int == 2 })
            let audiences = accepted.compactMap { ($0["data"] as? [String: Any])?["audience"] as? [String: Int] }
            #expect(audiences == [["userKeyCount": 2], ["userKeyCount": 2]])
            let proofs = accepted.compactMap { ($0["data"] as? [String: Any])?["proof"] as? [String: Int] }
            #expect(proofs == [["userKeyCount": 2, "registrationTokenCount": 2]])

            // The erasure of user1 takes them out of the waiting plan's lists (the planned one
            // holds counts); the other recipients stay.
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            let erasure = PersonErasure(producer: producer, topic: h.topics.subscriptions.name, postgres: h.postgres, logger: h.logger)
            let erased = try await erasure.erase(serviceName: service, userKey: "user1", token: nil)
            await producer.close()
            #expect(erased.deliveryPlans == 1 && erased.subscriptions == 1)
            func list(_ path: String) async throws -> String? {
                try await h.text("SELECT (accepted #> \(path)::text[])::text FROM push.delivery_plans WHERE delivery_id = \(waiting)")
            }
            #expect(try await list("{audience,userKeys}") == #"["user2"]"#)
            #expect(try await list("{proof,userKeys}") == #"["user3"]"#)
            #expect(try await list("{proof,registrationTokens}") == #"["\#(token2)"]"#)
            #expect(
                try await h.int(
                    """
                    SELECT count(*)::int FROM push.delivery_plans
                    WHERE delivery_id IN (\(planned), \(waiting)) AND (accepted::text LIKE '%user1%' OR accepted::text LIKE \("%\(token1)%"))
                    """) == 0)

            // Every byte of push.delivery-events (keys and values): no user key, no token.
            let bytes = try await h.records(h.topics.deliveryEvents.name).flatMap { ($0.key ?? []) + $0.value }
            let read = Self.contains(bytes, "userKeyCount")
            #expect(read, "the scan reads the accepted deliveries")
            let named = ["user1", "user2", "user3", token1, token2].filter { Self.contains(bytes, $0) }
            #expect(named == [], "recipients in push.delivery-events")

            // A version-1 DeliveryAccepted (lists in clear, written before version 2) is counted
            // by the projection all the same.
            let old = DeliveryAccepted(
                deliveryId: "old-\(h.suffix)", requestId: "old-\(h.suffix)", serviceId: UUID(), serviceName: service, apps: [],
                audience: .init(userKeys: ["a", "b", "c"]), content: .init(body: "x"), validUntil: Date().addingTimeInterval(60), sendAt: Date(),
                throttlePerSecond: nil, acceptedAt: Date(), proof: .init(registrationTokens: ["t"]))
            var record = try KafkaProducerRecord(topic: h.topics.deliveryEvents.name, event: EventEnvelope(key: old.deliveryId, payload: old))
            let text = String(decoding: record.value, as: UTF8.self)
            try #require(text.contains(#""version":2"#))
            record.value = Array(text.replacingOccurrences(of: #""version":2"#, with: #""version":1"#).utf8)
            try await DeliveryIndicatorTests.publish(h, [record])
            try await eventually("the version-1 delivery projected") {
                try await h.text("SELECT audience::text FROM push.deliveries WHERE delivery_id = \(old.deliveryId)") == #"{"userKeyCount": 3}"#
            }
            #expect(try await h.text("SELECT proof::text FROM push.deliveries WHERE delivery_id = \(old.deliveryId)") == "true")
        }
    }
}
