import Foundation
import Kafka
import PushEvents
import PushPlanning
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Several real `delivery-planning` executables share one large delivery (its shards,
/// `push.delivery_shards`), and are killed with SIGKILL in the middle of it.
@Suite("Sharded fan-out across planner processes", .serialized)
struct ShardedPlannerTests {
    static let devicesPerApp = 20_000
    /// Every 100th device of each app is quarantined: an exclusion, not a message.
    static let excluded = 2 * (devicesPerApp / 100)
    static let messages = 2 * devicesPerApp - excluded

    /// A planner on the run's topics; 4,000 subscriptions per shard (10 shards for 40,000
    /// devices), chunks of 1,000.
    static func startPlanner(suffix: String, opsPort: Int) throws -> BuiltExecutable {
        var environment = try PlanningHarness.environment(suffix: suffix)
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment["LOG_LEVEL"] = "info"
        environment["PLANNER_CHUNK_SIZE"] = "1000"
        environment["PLANNER_SHARD_SIZE"] = "4000"
        environment["PLANNER_POLL_INTERVAL_MS"] = "100"
        environment["PLANNER_IDLE_WAIT_MS"] = "500"
        // The test stops its planners one after the other: the last one's consumers close while
        // their groups rebalance after the others left, and librdkafka's close then blocks for up
        // to the session timeout (6 s here). With the 7 s default, that and the other consumers'
        // closes outlasted the grace on CI (status 70, the planner group closed 8 s
        // after SIGTERM). The shutdown's budget is the platform's choice (docs/configuration.md).
        environment["PUSH_SHUTDOWN_GRACE_MS"] = "20000"
        environment["PLANNER_GROUP_LAG_INTERVAL_MS"] = "1000"
        return try BuiltExecutable("delivery-planning", environment: environment)
    }

    /// One planner process and the port of its /metrics.
    struct Planner {
        var process: BuiltExecutable
        var opsPort: Int
        /// Messages it published, read from its /metrics (before a kill, for a killed one).
        var published = 0
    }

    /// `push_planner_messages_total{outcome="published"}` of a running planner.
    static func published(opsPort: Int) async throws -> Int {
        Int(try await OpsMetrics.value("push_planner_messages_total", labels: [#"outcome="published""#], port: opsPort) ?? 0)
    }

    /// Chunks some instance resumed after a kill (its log's "Resuming an interrupted chunk"), and
    /// of them those it found partly on the broker: `already.published` (the chunk's records on
    /// the topics) and `to.publish` (the rest) both above 0.
    static func resumes(_ planners: [Planner]) -> (all: Int, partly: Int) {
        func value(_ name: String, in line: Substring) -> Int {
            guard let range = line.range(of: "\(name)=") else { return 0 }
            return Int(line[range.upperBound...].prefix { $0.isNumber }) ?? 0
        }
        let lines = planners.flatMap { $0.process.log().split(separator: "\n").filter { $0.contains("Resuming an interrupted chunk") } }
        return (lines.count, lines.filter { value("already.published", in: $0) > 0 && value("to.publish", in: $0) > 0 }.count)
    }

    @Test("N planner processes share a 40,000-device delivery through SIGKILLs: one message per device, planned once", arguments: [2, 3])
    func sharedThroughKills(instances: Int) async throws {
        let suffix = PlanningHarness.makeSuffix()
        let requestId = "shards-\(instances)-\(suffix)"
        try await PlanningHarness.run(suffix: suffix, planner: false) { h in
            let (service, apps) = try await h.defineService()
            for app in apps {
                try await h.addSubscriptions(app, count: Self.devicesPerApp)
                try await h.postgres.query(
                    """
                    UPDATE push.subscriptions SET disabled = true, disabled_reason = 'test'
                    WHERE app_id = \(app.appId) AND substring(user_key from 5)::int % 100 = 0
                    """,
                    logger: h.logger)
            }
            var planners: [Planner] = []
            var finished: [Planner] = []
            for _ in 0..<instances {
                let port = try EphemeralPort.next()
                planners.append(Planner(process: try Self.startPlanner(suffix: suffix, opsPort: port), opsPort: port))
            }
            defer { for planner in planners + finished { planner.process.killIfRunning() } }
            for planner in planners { try await planner.process.waitUntilReady(port: planner.opsPort, path: "/health/live") }
            try await h.publishRequest(requestJSON(requestId: requestId, service: service))
            try await eventually(within: .seconds(60), "the delivery is accepted") {
                try await h.text("SELECT delivery_id FROM push.delivery_plans WHERE request_id = \(requestId)") != nil
            }
            let deliveryId = try await h.deliveryId(of: requestId)
            try await eventually(within: .seconds(60), "the delivery is cut into 10 shards") {
                try await h.int("SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(deliveryId)") == 10
            }

            // Kill each first instance in turn, once it has published part of the delivery (each
            // replaced by a new process): the others take its shards over. Then, until a new
            // instance resumed a chunk a kill left in flight (at most 6 times), kill every instance
            // at once while a chunk is marked, so that the chunk is surely a killed one's.
            var kills: [Int] = []
            var firstPublished: [Int] = []
            var round = 0
            var replacementsPublished: [Int] = []
            var markedKills = 0
            while round < instances || (Self.resumes(finished + planners).all == 0 && round < instances + 6) {
                let before = try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)")
                if before >= Self.messages { break }
                var victims: [Int] = []
                if round < instances {
                    let opsPort = planners[round].opsPort
                    try await eventually(within: .seconds(60), "planner \(round) publishes part of the delivery") {
                        try await Self.published(opsPort: opsPort) > 0
                    }
                    firstPublished.append(try await Self.published(opsPort: opsPort))
                    victims = [round]
                } else {
                    try await eventually(within: .seconds(120), "the fan-out progresses") {
                        try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") >= min(before + 500, Self.messages)
                    }
                    for planner in planners { replacementsPublished.append((try? await Self.published(opsPort: planner.opsPort)) ?? 0) }
                    // Freeze every instance (SIGSTOP) and look: a chunk marked now stays marked
                    // until the kill. None marked: let them go on (SIGCONT) and look again.
                    // (Reading the mark and then killing races the chunk's end: a kill between
                    // chunks leaves nothing to resume.)
                    let deadline = ContinuousClock.now + .seconds(10)
                    var marked = false
                    while !marked, ContinuousClock.now < deadline {
                        for planner in planners { kill(planner.process.processIdentifier, SIGSTOP) }
                        marked =
                            try await h.int(
                                "SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(deliveryId) AND pending_chunk IS NOT NULL") > 0
                        if !marked {
                            for planner in planners { kill(planner.process.processIdentifier, SIGCONT) }
                            try await Task.sleep(for: .milliseconds(5))
                        }
                    }
                    // No chunk marked in 10 s (a loaded machine): no kill this round, since a kill
                    // between chunks leaves nothing to resume.
                    if !marked {
                        round += 1
                        continue
                    }
                    markedKills += 1
                    victims = Array(planners.indices)
                }
                for index in victims { kill(planners[index].process.processIdentifier, SIGKILL) }
                for index in victims {
                    let victim = planners[index]
                    await victim.process.kill()
                    #expect(victim.process.terminationReason == .uncaughtSignal)
                    finished.append(victim)
                    let port = try EphemeralPort.next()
                    planners[index] = Planner(process: try Self.startPlanner(suffix: suffix, opsPort: port), opsPort: port)
                }
                kills.append(try await h.int("SELECT targeted::int FROM push.delivery_plans WHERE delivery_id = \(deliveryId)"))
                round += 1
                if round > instances {
                    // Time for a new instance to resume the chunks in flight (and log it).
                    let planners = planners
                    let deadline = ContinuousClock.now + .seconds(8)
                    while ContinuousClock.now < deadline, !planners.contains(where: { $0.process.log().contains("Resuming an interrupted chunk") }) {
                        try await Task.sleep(for: .milliseconds(100))
                    }
                }
            }
            #expect(kills.allSatisfy { $0 < Self.messages }, "every kill landed before the end of the fan-out: \(kills)")

            try await eventually(within: .seconds(240), "the planners finish the delivery") {
                try await h.text("SELECT status FROM push.delivery_plans WHERE delivery_id = \(deliveryId)") == "planned"
            }
            try await h.waitPlanned(requestId, within: .seconds(180))
            var observed: [Double] = []
            var seconds = 0.0
            for index in planners.indices {
                planners[index].published = try await Self.published(opsPort: planners[index].opsPort)
                let port = planners[index].opsPort
                observed.append(try await OpsMetrics.value("push_delivery_request_to_planned_seconds_count", labels: [#"lane="bulk""#], port: port) ?? 0)
                seconds += try await OpsMetrics.value("push_delivery_request_to_planned_seconds_sum", labels: [#"lane="bulk""#], port: port) ?? 0
            }
            // Every instance reads the channel's groups from outside: the senders' group, which no
            // process of this test joins, owes the delivery's APNs messages (on Tansu a topic's end
            // can read a batch short: at least most of them); the intake group owes nothing.
            let port = try #require(planners.last?.opsPort)
            try await eventually(within: .seconds(20), "push_consumer_group_lag of the APNs sender's group") {
                try await OpsMetrics.value("push_consumer_group_lag", labels: [#"group="push-apns-sender""#], port: port) ?? 0 > Double(Self.messages / 4)
            }
            // The intake group's committed offset, and the gauge's reading of it (every second
            // here), trail its consumption of the request: the gauge reaches 0. (A replacement
            // that starts the requests' partition from the projection's own position, after the
            // request, reads nothing there: the position it was given is what it commits.)
            try await eventually(within: .seconds(30), "push_consumer_group_lag of the planner's intake group is 0") {
                try await OpsMetrics.value("push_consumer_group_lag", labels: [#"group="test.planner.\#(suffix)""#], port: port) == 0
            }
            // The instance that ended the last shard observed the delivery's request-to-planned
            // time, once; the fan-out took seconds at least.
            #expect(observed.reduce(0, +) == 1, "push_delivery_request_to_planned_seconds_count per instance: \(observed)")
            #expect(seconds > 0.5, "push_delivery_request_to_planned_seconds_sum: \(seconds)")
            // SIGTERM: the last one, alone, ends cleanly (with several members leaving the
            // consumer groups on a loaded machine, the others' leave may outlast the grace).
            for index in planners.indices { await planners[index].process.terminate() }
            #expect(planners.last?.process.terminationStatus == 0, "SIGTERM ends the planner cleanly\n\(planners.last?.process.logTail() ?? "")")

            // Every device exactly one message on the topics, none lost, none twice.
            let records = try await h.messageRecords(openSealed: false).filter { $0.headers.string("push-delivery-id") == deliveryId }
            let ids = Set(records.compactMap { $0.headers.string("push-message-id") })
            let broadLogIds = Set(records.compactMap { $0.headers.string("push-broad-log-id") })
            #expect(records.count == Self.messages, "killed at \(kills)")
            #expect(ids.count == Self.messages)
            #expect(broadLogIds.count == Self.messages, "one distinct _mId per message")
            let enabled = try await h.devices("SELECT app_id, token_digest FROM push.subscriptions WHERE app_id = ANY(\(apps.map(\.appId))) AND NOT disabled")
            let reached = Set(try await h.plannedMessages(deliveryId).map { PlanningHarness.Device(appId: $0.appId, tokenDigest: $0.tokenDigest) })
            #expect(enabled.count == Self.messages && reached == enabled, "every enabled device has its message")

            // Planned once, with the sums of the shards: the event, the plan, the indicators.
            let planned = try await h.records(h.topics.deliveryEvents.name).filter {
                let text = String(decoding: $0.value, as: UTF8.self)
                return text.contains(#""DeliveryPlanned""#) && text.contains(#""deliveryId":"\#(deliveryId)""#)
            }
            #expect(Set(planned.map(\.value)).count == 1, "one DeliveryPlanned (the outbox may repeat the same record after a kill)")
            #expect(try await h.int("SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(deliveryId) AND status <> 'planned'") == 0)
            // A planned shard keeps no device's token (an erasure could not reach them there).
            #expect(
                try await h.int(
                    """
                    SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(deliveryId)
                      AND (start_token IS NOT NULL OR end_token IS NOT NULL OR cursor_token IS NOT NULL)
                    """) == 0)
            #expect(try await h.int("SELECT targeted::int FROM push.deliveries WHERE delivery_id = \(deliveryId)") == Self.messages)
            #expect(try await h.int("SELECT excluded::int FROM push.deliveries WHERE delivery_id = \(deliveryId)") == Self.excluded)
            try await eventually(within: .seconds(60), "the indicators' to_deliver") {
                try await DeliveryIndicatorTests.indicators(h, deliveryId)?.toDeliver == Self.messages
            }
            #expect(try await DeliveryIndicatorTests.indicators(h, deliveryId)?.excluded == Self.excluded)

            // Every one of the first processes did part of the work before its kill (they shared
            // the delivery), and the ones started after the kills took over part of it.
            #expect(
                firstPublished.allSatisfy { $0 > 0 },
                "published by each first process before its kill: \(firstPublished)\n\(finished.first?.process.logTail(lines: 30) ?? "")")
            replacementsPublished += planners.map(\.published)
            #expect(replacementsPublished.contains { $0 > 0 }, "published by the processes started after kills: \(replacementsPublished)")
            let all = finished + planners
            // A chunk a kill left marked was resumed by another process (reading the topics back
            // from the shard's mark). One partly on the broker is rare here (a chunk's records are
            // acknowledged together, unthrottled); PlannerCrashTests makes that case every run.
            let resumed = Self.resumes(all)
            #expect(
                resumed.all >= 1,
                "a chunk a kill left in flight was resumed by another instance (killed at \(kills), \(markedKills) of the kills of every instance with a chunk marked)"
            )
            print(
                "sharded fan-out, \(instances) instances: killed at \(kills), published by the first processes before their kill \(firstPublished), by the last ones \(planners.map(\.published)), kills of every instance with a chunk marked \(markedKills), chunks resumed \(resumed.all), of them partly published \(resumed.partly)"
            )
        }
    }
}
