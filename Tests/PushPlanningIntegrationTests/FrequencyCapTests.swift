import Foundation
import PushEvents
import PushTestSupport
import Testing

/// A service's frequency cap through the real planner, PostgreSQL and broker: a person who got
/// the cap's number of bulk deliveries in the period is left out of the next, logged with
/// reason `frequency-cap`; transactional deliveries and proofs are neither capped nor counted;
/// a delivery older than the period no longer counts.
@Suite("Frequency cap", .serialized)
struct FrequencyCapTests {
    @Test("at most 2 bulk deliveries per person in 24 h: the third leaves everyone out, transactional ones and proofs pass, an old delivery stops counting")
    func capsBulkDeliveries() async throws {
        let port = try EphemeralPort.next()
        try await PlanningHarness.run(settings: DeliveryAdminTests.settings(port: port)) { h in
            let (service, apps) = try await h.defineService()
            // users 1-4 on both apps: four people with two devices each.
            for app in apps { try await h.addSubscriptions(app, count: 4) }
            try await h.postgres.query(
                "UPDATE push.services SET frequency_cap_messages = 2, frequency_cap_period_hours = 24 WHERE name = \(service)", logger: h.logger)

            func deliver(_ name: String, priority: String? = nil, proof: String? = nil) async throws -> (id: String, messages: [MessageReference]) {
                let requestId = "\(name)-\(h.suffix)"
                var document = requestJSON(requestId: requestId, service: service, priority: priority)
                if let proof { document = String(document.dropLast()) + #", "proof": {"userKeys": ["\#(proof)"]}}"# }
                try await h.publishRequest(document)
                let deliveryId = try await h.waitPlanned(requestId)
                return (deliveryId, try await h.plannedMessages(deliveryId))
            }
            func capped(_ deliveryId: String, _ count: Int) async throws -> Int {
                try await eventually("\(count) frequency-cap exclusions of \(deliveryId) logged") {
                    try await h.int("SELECT count(*)::int FROM push.exclusion_log WHERE delivery_id = \(deliveryId) AND reason = 'frequency-cap'") >= count
                }
                return try await h.int("SELECT count(*)::int FROM push.exclusion_log WHERE delivery_id = \(deliveryId) AND reason = 'frequency-cap'")
            }

            let first = try await deliver("first")
            let second = try await deliver("second")
            #expect(first.messages.count == 8 && second.messages.count == 8)
            #expect(try await h.int("SELECT count(*)::int FROM push.frequency_log WHERE delivery_id = \(first.id)") == 4, "one row per person")

            let third = try await deliver("third")
            #expect(third.messages.isEmpty, "everyone got two bulk deliveries today")
            #expect(try await capped(third.id, 8) == 8)
            #expect(try await h.int("SELECT excluded::int FROM push.delivery_plans WHERE delivery_id = \(third.id)") == 8)
            // The preview says so before anything is sent; not for a transactional request.
            let preview = try await DeliveryAdminTests.call(
                port: port, "POST", "/deliveries/preview?samples=0", body: requestJSON(requestId: "preview-\(h.suffix)", service: service))
            #expect(preview.json["targeted"] as? Int == 0 && preview.json["excluded"] as? Int == 8, "\(String(decoding: preview.body, as: UTF8.self))")
            #expect((preview.json["exclusions"] as? [[String: Any]])?.first?["reason"] as? String == "frequency-cap")
            let urgentPreview = try await DeliveryAdminTests.call(
                port: port, "POST", "/deliveries/preview?samples=0",
                body: requestJSON(requestId: "preview-urgent-\(h.suffix)", service: service, priority: "transactional"))
            #expect(urgentPreview.json["targeted"] as? Int == 8)

            let urgent = try await deliver("urgent", priority: "transactional")
            #expect(urgent.messages.count == 8, "a transactional delivery is not capped")
            let proof = try await deliver("proof", proof: "user2")
            #expect(proof.messages.count == 2, "a proof is not capped")
            #expect(try await h.int("SELECT count(*)::int FROM push.frequency_log WHERE delivery_id IN (\(urgent.id), \(proof.id))") == 0, "nor counted")

            // user1's first delivery 25 hours ago: one in the period, so one more for user1.
            try await h.postgres.query(
                """
                UPDATE push.frequency_log SET planned_at = planned_at - interval '25 hours'
                WHERE delivery_id = \(first.id) AND subject_id = (
                    SELECT k.subject_id FROM push.subject_keys k JOIN push.services sv ON sv.service_id = k.service_id
                    WHERE sv.name = \(service) AND k.subject = 'user:user1')
                """,
                logger: h.logger)
            let fourth = try await deliver("fourth")
            #expect(fourth.messages.count == 2, "user1's two devices")
            #expect(try await capped(fourth.id, 6) == 6)
            let users = try await h.int(
                """
                SELECT count(DISTINCT s.user_key)::int FROM push.subscriptions s
                WHERE s.token_digest = ANY(\(fourth.messages.map(\.tokenDigest))) AND s.user_key = 'user1'
                """)
            #expect(users == 1, "the fourth delivery went to user1 only")
        }
    }

    /// A real `delivery-planning` executable on the run's topics, with small chunks and shards
    /// so that two of them interleave the chunks of two deliveries.
    static func startPlanner(suffix: String) throws -> BuiltExecutable {
        var environment = try PlanningHarness.environment(suffix: suffix)
        environment["PUSH_OPS_PORT"] = String(try EphemeralPort.next())
        environment["LOG_LEVEL"] = "warning"
        environment["PLANNER_CHUNK_SIZE"] = "25"
        environment["PLANNER_SHARD_SIZE"] = "100"
        environment["PLANNER_POLL_INTERVAL_MS"] = "50"
        environment["PLANNER_IDLE_WAIT_MS"] = "200"
        environment["PUSH_SHUTDOWN_GRACE_MS"] = "20000"
        return try BuiltExecutable("delivery-planning", environment: environment)
    }

    @Test("two planners fan out two bulk deliveries at once under a cap of 1: every person gets exactly one of them, the other logs them as capped")
    func twoPlannersOverlappingDeliveries() async throws {
        let suffix = PlanningHarness.makeSuffix()
        let people = 300
        try await PlanningHarness.run(suffix: suffix, planner: false) { h in
            let (service, apps) = try await h.defineService()
            // users 1-300 on both apps: 300 people with two devices each.
            for app in apps { try await h.addSubscriptions(app, count: people) }
            try await h.postgres.query(
                "UPDATE push.services SET frequency_cap_messages = 1, frequency_cap_period_hours = 24 WHERE name = \(service)", logger: h.logger)
            let planners = try [Self.startPlanner(suffix: suffix), Self.startPlanner(suffix: suffix)]
            defer { for planner in planners { planner.killIfRunning() } }

            let requests = ["left-\(h.suffix)", "right-\(h.suffix)"]
            // Both due at the same moment and paced at 150 messages a second, so that their
            // fan-outs (four seconds each) run side by side.
            let sendAt = Date().addingTimeInterval(8).iso
            for requestId in requests { try await h.publishRequest(requestJSON(requestId: requestId, service: service, sendAt: sendAt, throttle: 150)) }
            var persons: [String: Set<String>] = [:]
            var deliveries: [String: String] = [:]
            for requestId in requests {
                let deliveryId = try await h.waitPlanned(requestId, within: .seconds(120))
                let messages = try await h.plannedMessages(deliveryId)
                let users = try await h.postgres.query(
                    "SELECT user_key FROM push.subscriptions WHERE token_digest = ANY(\(messages.map(\.tokenDigest)))", logger: h.logger)
                var keys: [String] = []
                for try await key in users.decode(String.self) { keys.append(key) }
                #expect(keys.count == messages.count, "each message is one device of the service")
                persons[requestId] = Set(keys)
                deliveries[requestId] = deliveryId
            }
            let (left, right) = (persons[requests[0]] ?? [], persons[requests[1]] ?? [])
            print("frequency cap, two planners: \(left.count) and \(right.count) of \(people) people")
            #expect(left.intersection(right).isEmpty, "people who got both deliveries: \(left.intersection(right).sorted().prefix(10))")
            #expect(left.count + right.count == people, "everyone got one of them")
            // Each delivery logs the devices of the people the other one got as capped.
            for (requestId, others) in [(requests[0], right.count), (requests[1], left.count)] {
                let deliveryId = deliveries[requestId] ?? ""
                try await eventually("\(2 * others) devices of \(deliveryId) logged as capped") {
                    try await h.int("SELECT count(*)::int FROM push.exclusion_log WHERE delivery_id = \(deliveryId) AND reason = 'frequency-cap'") == 2 * others
                }
            }
            for planner in planners { await planner.terminate() }
        }
    }
}
