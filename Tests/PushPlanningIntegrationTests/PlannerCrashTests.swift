import Foundation
import Kafka
import PushEvents
import PushPlanning
import PushTestSupport
import Testing

/// The real `delivery-planning` executable killed with SIGKILL in the middle of a large fan-out.
@Suite("Planner survives SIGKILL mid fan-out", .serialized)
struct PlannerCrashTests {
    /// 20,000 devices in chunks of 1,000: twenty chunks, as many as a kill needs to land inside one
    /// several times; throttled to two chunks a second, so each takes half a second to publish
    /// whatever its size (the test's reads of the topics cost in proportion to the devices).
    static let devices = 20_000
    static let chunkSize = 1_000

    static func startPlanner(suffix: String, opsPort: Int) throws -> BuiltExecutable {
        var environment = try PlanningHarness.environment(suffix: suffix)
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment["LOG_LEVEL"] = "error"
        environment["PLANNER_CHUNK_SIZE"] = String(chunkSize)
        environment["PLANNER_POLL_INTERVAL_MS"] = "100"
        return try BuiltExecutable("delivery-planning", environment: environment)
    }

    @Test("kill -9 while chunks are being published, restart: 20,000 devices get exactly one message each")
    func killMidFanOut() async throws {
        let suffix = PlanningHarness.makeSuffix()
        let requestId = "crash-\(suffix)"
        try await PlanningHarness.run(suffix: suffix, planner: false) { h in
            let (service, apps) = try await h.defineService()
            try await h.addSubscriptions(apps[0], count: Self.devices / 2)
            try await h.addSubscriptions(apps[1], count: Self.devices / 2)
            // Throttled so that each chunk takes about half a second to publish:
            // a kill then lands inside a chunk, not between two.
            try await h.publishRequest(requestJSON(requestId: requestId, service: service, throttle: Self.chunkSize * 2))

            // A kill only tests something when part of a chunk reached the broker and the
            // checkpoint did not: then a planner that re-sent the chunk would duplicate. Kill
            // until that happened twice.
            var partialKills = 0
            var kills: [(committed: Int, onTopics: Int)] = []
            var attempt = 0
            while partialKills < 2, attempt < 10 {
                attempt += 1
                let planner = try Self.startPlanner(suffix: suffix, opsPort: try EphemeralPort.next())
                defer { planner.killIfRunning() }
                let before = try await h.int("SELECT coalesce((SELECT targeted::int FROM push.delivery_plans WHERE request_id = \(requestId)), 0)")
                try await eventually(within: .seconds(90), "the planner publishes a chunk") {
                    try await h.int(
                        """
                        SELECT count(*)::int FROM push.delivery_plans p WHERE request_id = \(requestId) AND targeted > \(before + Self.chunkSize)
                          AND EXISTS (SELECT 1 FROM push.delivery_shards s WHERE s.delivery_id = p.delivery_id AND s.pending_chunk IS NOT NULL)
                        """
                    ) == 1
                }
                let deliveryId = try await h.deliveryId(of: requestId)
                try await Task.sleep(for: .milliseconds(Int.random(in: 50...300)))
                await planner.kill()
                #expect(planner.terminationReason == .uncaughtSignal)
                let committed = try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)")
                let onTopics = try await h.messageRecords(openSealed: false).filter { $0.headers.string("push-delivery-id") == deliveryId }.count
                kills.append((committed, onTopics))
                if onTopics > committed { partialKills += 1 }
            }
            #expect(partialKills == 2, "two kills left a chunk partly published: \(kills)")
            #expect(kills.allSatisfy { $0.committed < Self.devices })
            let killedAtTargeted = kills.map(\.committed)
            let deliveryId = try await h.deliveryId(of: requestId)

            let planner = try Self.startPlanner(suffix: suffix, opsPort: try EphemeralPort.next())
            defer { planner.killIfRunning() }
            try await eventually(within: .seconds(180), "the restarted planner finishes") {
                try await h.text("SELECT status FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") == "planned"
            }
            try await h.waitPlanned(requestId, within: .seconds(120))
            await planner.terminate()
            #expect(planner.terminationStatus == 0, "SIGTERM ends the planner cleanly\n\(planner.logTail())")

            let records = try await h.messageRecords().filter { $0.headers.string("push-delivery-id") == deliveryId }
            let ids = Set(records.compactMap { $0.headers.string("push-message-id") })
            #expect(records.count == Self.devices, "no message lost and none published twice (killed at \(killedAtTargeted))")
            #expect(ids.count == Self.devices)
            #expect(try await h.int("SELECT targeted::int FROM push.deliveries WHERE delivery_id = \(deliveryId)") == Self.devices)

            // The broadLog ids (`_mId`): one per message, the same in the header as in the
            // record, and each chunk's ids one block, consecutive in audience order (app, token,
            // ordered by PostgreSQL as the targeting page orders them): the chunks a kill
            // interrupted handed out, after the restart, the ids their marks recorded.
            var (appIds, tokens, broadLogIds): ([UUID], [String], [Int32]) = ([], [], [])
            var mismatched = 0
            for record in records {
                let data = try #require((try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])?["data"] as? [String: Any])
                let id = try #require(data["broadLogId"] as? Int)
                if record.headers.string("push-broad-log-id") != String(id) { mismatched += 1 }
                let app = try #require(data["appId"] as? String)
                appIds.append(try #require(UUID(uuidString: app)))
                tokens.append(try #require(data["registrationToken"] as? String, "opened"))
                broadLogIds.append(Int32(id))
            }
            #expect(mismatched == 0, "the header's _mId is the record's")
            #expect(Set(broadLogIds).count == Self.devices, "one distinct _mId per device")
            var inOrder: [Int32] = []
            let rows = try await h.postgres.query(
                "SELECT id FROM unnest(\(appIds)::uuid[], \(tokens)::text[], \(broadLogIds)::int[]) AS x(app, token, id) ORDER BY app, token", logger: h.logger)
            for try await id in rows.decode(Int32.self) { inOrder.append(id) }
            let breaks = inOrder.indices.dropFirst().filter { inOrder[$0] != inOrder[$0 - 1] + 1 && $0 % Self.chunkSize != 0 }
            #expect(breaks.isEmpty, "ids are consecutive within each chunk; breaks at \(breaks.prefix(10))")
        }
    }
}
