import Foundation
import Kafka
import PushEvents
import PushTestSupport
import Testing

/// The planner's lanes (docs/planning.md, "Lanes"): a transactional request is planned at once,
/// on its lane's topics, while a bulk delivery is being fanned out.
@Suite("Planning lanes", .serialized)
struct PlanningLaneTests {
    @Test("a transactional request is planned on its own topic while a 20,000-device bulk delivery is still being fanned out")
    func plannedAtOnce() async throws {
        try await PlanningHarness.run { h in
            let (service, apps) = try await h.defineService(platforms: ["android"])
            let app = try #require(apps.first)
            try await h.addSubscriptions(app, count: 20_000)
            let bulkId = "bulk-\(h.suffix)"
            // 2,000 a second: the fan-out takes about 10 s.
            try await h.publishRequest(requestJSON(requestId: bulkId, service: service, throttle: 2_000))
            try await h.eventually("the bulk fan-out has begun") {
                // The cursor moved past a first chunk of 500: it is on the broker.
                try await h.int("SELECT count(*)::int FROM push.delivery_plans WHERE request_id = \(bulkId) AND status = 'planning' AND targeted >= 500") == 1
            }

            let transactionalId = "reset-\(h.suffix)"
            try await h.publishRequest(
                requestJSON(requestId: transactionalId, service: service, audience: #"{"userKeys": ["user7"]}"#, priority: "transactional"))
            try await h.eventually(within: .seconds(30), "the transactional delivery is planned") {
                try await h.text("SELECT status FROM push.delivery_plans WHERE request_id = \(transactionalId)") == "planned"
            }
            // Planned while the bulk delivery was not: on one fan-out loop it would have waited
            // for the 20,000 devices.
            #expect(try await h.text("SELECT status FROM push.delivery_plans WHERE request_id = \(bulkId)") == "planning")
            let transactionalDelivery = try await h.deliveryId(of: transactionalId)
            let bulkDelivery = try await h.deliveryId(of: bulkId)

            let laneRecords = try await h.records(h.topics.fcmTransactionalMessages.name)
            #expect(laneRecords.count == 1)
            #expect(laneRecords.first?.headers.string("push-delivery-id") == transactionalDelivery)
            try await h.waitPlanned(transactionalId)
            try await h.waitPlanned(bulkId)
            let bulkRecords = try await h.records(h.topics.fcmMessages.name)
            #expect(bulkRecords.count == 20_000)
            #expect(bulkRecords.allSatisfy { $0.headers.string("push-delivery-id") == bulkDelivery }, "only the bulk delivery on the bulk topic")
            // The analysts see the priority; the broad log reads both lanes.
            #expect(try await h.text("SELECT priority FROM push.deliveries WHERE request_id = \(transactionalId)") == "transactional")
            #expect(try await h.text("SELECT priority FROM push.deliveries WHERE request_id = \(bulkId)") == "bulk")
            #expect(try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(transactionalDelivery)") == 1)
        }
    }

    @Test("an unknown priority is rejected with the reason naming it")
    func unknownPriority() async throws {
        try await PlanningHarness.run { h in
            let (service, _) = try await h.defineService(platforms: ["android"])
            let requestId = "urgent-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: requestId, service: service, priority: "urgent"))
            try await h.eventually("the request is rejected") {
                try await h.deliveryEvents().contains { event in
                    event["type"] as? String == "DeliveryRejected"
                        && ((event["data"] as? [String: Any])?["reason"] as? String) == "priority must be transactional or bulk, got 'urgent'"
                }
            }
        }
    }
}
