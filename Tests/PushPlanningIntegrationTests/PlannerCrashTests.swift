import Foundation
import Kafka
import PushEvents
import PushPlanning
import PushTestSupport
import Testing

/// The real `delivery-planning` executable killed with SIGKILL in the middle of a large fan-out.
@Suite("Planner survives SIGKILL mid fan-out", .serialized)
struct PlannerCrashTests {
    static func startPlanner(suffix: String, opsPort: Int) throws -> BuiltExecutable {
        var environment = try PlanningHarness.environment(suffix: suffix)
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment["LOG_LEVEL"] = "error"
        environment["PLANNER_CHUNK_SIZE"] = "5000"
        environment["PLANNER_POLL_INTERVAL_MS"] = "100"
        return try BuiltExecutable("delivery-planning", environment: environment)
    }

    @Test("kill -9 while chunks are being published, restart: 100,000 devices get exactly one message each")
    func killMidFanOut() async throws {
        let suffix = PlanningHarness.makeSuffix()
        let requestId = "crash-\(suffix)"
        let deliveryId = DeliveryRequestValidator.deliveryId(forRequestId: requestId)
        try await PlanningHarness.run(suffix: suffix, planner: false) { h in
            let (service, apps) = try await h.defineService()
            try await h.addSubscriptions(apps[0], count: 50_000)
            try await h.addSubscriptions(apps[1], count: 50_000)
            // Throttled so that each 5,000-message chunk takes about half a second to publish:
            // a kill then lands inside a chunk, not between two.
            try await h.publishRequest(requestJSON(requestId: requestId, service: service, throttle: 10_000))

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
                let before = try await h.int("SELECT coalesce((SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)), 0)")
                try await h.eventually(within: .seconds(90), "the planner publishes a chunk") {
                    try await h.int(
                        "SELECT count(*)::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId) AND targeted > \(before + 5_000) AND pending_chunk IS NOT NULL"
                    ) == 1
                }
                try await Task.sleep(for: .milliseconds(Int.random(in: 50...300)))
                await planner.kill()
                #expect(planner.terminationReason == .uncaughtSignal)
                let committed = try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)")
                let onTopics = try await h.messageRecords().filter { $0.headers.string("push-delivery-id") == deliveryId }.count
                kills.append((committed, onTopics))
                if onTopics > committed { partialKills += 1 }
            }
            #expect(partialKills == 2, "two kills left a chunk partly published: \(kills)")
            #expect(kills.allSatisfy { $0.committed < 100_000 })
            let killedAtTargeted = kills.map(\.committed)

            let planner = try Self.startPlanner(suffix: suffix, opsPort: try EphemeralPort.next())
            defer { planner.killIfRunning() }
            try await h.eventually(within: .seconds(180), "the restarted planner finishes") {
                try await h.text("SELECT status FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") == "planned"
            }
            try await h.waitPlanned(requestId, within: .seconds(120))
            await planner.terminate()
            #expect(planner.terminationStatus == 0, "SIGTERM ends the planner cleanly\n\(planner.logTail())")

            let records = try await h.messageRecords().filter { $0.headers.string("push-delivery-id") == deliveryId }
            let ids = Set(records.compactMap { $0.headers.string("push-message-id") })
            #expect(records.count == 100_000, "no message lost and none published twice (killed at \(killedAtTargeted))")
            #expect(ids.count == 100_000)
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(deliveryId)") == 100_000)
            #expect(try await h.int("SELECT targeted::int FROM push.deliveries WHERE delivery_id = \(deliveryId)") == 100_000)
        }
    }
}
