import Foundation
import Kafka
import PushEvents
import PushPlanning
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
            try await eventually("the bulk fan-out has begun") {
                // The cursor moved past a first chunk of 500: it is on the broker.
                try await h.int("SELECT count(*)::int FROM push.delivery_plans WHERE request_id = \(bulkId) AND status = 'planning' AND targeted >= 500") == 1
            }

            let transactionalId = "reset-\(h.suffix)"
            try await h.publishRequest(
                requestJSON(requestId: transactionalId, service: service, audience: #"{"userKeys": ["user7"]}"#, priority: "transactional"))
            try await eventually(within: .seconds(30), "the transactional delivery is planned") {
                try await h.text("SELECT status FROM push.delivery_plans WHERE request_id = \(transactionalId)") == "planned"
            }
            // Planned while the bulk delivery was not: on one fan-out loop it would have waited
            // for the 20,000 devices.
            #expect(try await h.text("SELECT status FROM push.delivery_plans WHERE request_id = \(bulkId)") == "planning")
            let transactionalDelivery = try await h.deliveryId(of: transactionalId)
            let bulkDelivery = try await h.deliveryId(of: bulkId)

            let laneRecords = try await h.records(h.topics.fcmTransactionalMessages.name, openSealed: false)
            #expect(laneRecords.count == 1)
            #expect(laneRecords.first?.headers.string("push-delivery-id") == transactionalDelivery)
            try await h.waitPlanned(transactionalId)
            try await h.waitPlanned(bulkId)
            let bulkRecords = try await h.records(h.topics.fcmMessages.name, openSealed: false)
            #expect(bulkRecords.count == 20_000)
            #expect(bulkRecords.allSatisfy { $0.headers.string("push-delivery-id") == bulkDelivery }, "only the bulk delivery on the bulk topic")
            // The analysts see the priority; the message topics of both lanes count as planned.
            #expect(try await h.text("SELECT priority FROM push.deliveries WHERE request_id = \(transactionalId)") == "transactional")
            #expect(try await h.text("SELECT priority FROM push.deliveries WHERE request_id = \(bulkId)") == "bulk")
            #expect(try await h.plannedMessages(transactionalDelivery).count == 1)
            // The deliveries' admin API shows it.
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            let admin = DeliveryAdmin(
                postgres: h.postgres, producer: producer, topic: h.topics.deliveryRequests.name, eventsTopic: h.topics.deliveryEvents.name, logger: h.logger)
            #expect(try await admin.detail(deliveryId: transactionalDelivery)?.priority == .transactional)
            #expect(try await admin.detail(deliveryId: bulkDelivery)?.priority == .bulk)
            await producer.close()
        }
    }

    @Test("two bulk deliveries of one service accepted together are fanned out side by side, chunk after chunk, not one after the other")
    func bulkDeliveriesInterleave() async throws {
        try await PlanningHarness.run { h in
            let (service, apps) = try await h.defineService(platforms: ["android"])
            try await h.addSubscriptions(try #require(apps.first), count: 5_000)
            // One record carrying both requests would make them one batch of the intake; two
            // records read together are accepted in one commit too. Either way both are due
            // before the fan-out's first round ends.
            let first = "campaign-a-\(h.suffix)"
            let second = "campaign-b-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: first, service: service, throttle: 2_500))
            try await h.publishRequest(requestJSON(requestId: second, service: service, throttle: 2_500))
            let firstId = try await h.waitPlanned(first)
            let secondId = try await h.waitPlanned(second)
            // The records in the order the planner published them (their timestamps): the
            // deliveries alternate chunk by chunk (500 each in the tests' settings).
            let records = try await h.records(h.topics.fcmMessages.name, openSealed: false).filter {
                [firstId, secondId].contains($0.headers.string("push-delivery-id") ?? "")
            }
            #expect(records.count == 10_000)
            let order = records.sorted { ($0.timestampMilliseconds ?? 0) < ($1.timestampMilliseconds ?? 0) }.map {
                $0.headers.string("push-delivery-id") == firstId ? 0 : 1
            }
            let firstHalf = order.prefix(order.count / 2)
            // One after the other: the first half would be one delivery's 5,000 messages.
            #expect(firstHalf.count(where: { $0 == 0 }) >= 1_500, "the first delivery progressed in the first half")
            #expect(firstHalf.count(where: { $0 == 1 }) >= 1_500, "the second delivery progressed in the first half")
        }
    }

    @Test("a userKeys audience is one shard, planned without cutting the apps' subscriptions; an audience of all of them is cut into shards")
    func listAudienceIsOneShard() async throws {
        var settings = PlanningHarness.testSettings
        settings.shardSize = 1_000
        try await PlanningHarness.run(settings: settings) { h in
            let (service, apps) = try await h.defineService(platforms: ["android"])
            try await h.addSubscriptions(try #require(apps.first), count: 5_000)
            let reset = "reset-\(h.suffix)"
            try await h.publishRequest(
                requestJSON(requestId: reset, service: service, audience: #"{"userKeys": ["user7", "user4999"]}"#, priority: "transactional"))
            let everyone = "everyone-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: everyone, service: service))
            let resetId = try await h.waitPlanned(reset)
            let everyoneId = try await h.waitPlanned(everyone)
            // Before, the two keys' delivery was cut into 5 key ranges of the 5,000 subscriptions
            // (a count and a window over all of them first, then one query per range).
            #expect(try await h.int("SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(resetId)") == 1)
            #expect(try await h.int("SELECT count(*)::int FROM push.delivery_shards WHERE delivery_id = \(everyoneId)") == 5)
            #expect(try await h.int("SELECT targeted FROM push.delivery_plans WHERE delivery_id = \(resetId)") == 2)
            #expect(try await h.int("SELECT targeted FROM push.delivery_plans WHERE delivery_id = \(everyoneId)") == 5_000)
        }
    }

    @Test("an unknown priority is rejected with the reason naming it")
    func unknownPriority() async throws {
        try await PlanningHarness.run { h in
            let (service, _) = try await h.defineService(platforms: ["android"])
            let requestId = "urgent-\(h.suffix)"
            try await h.publishRequest(requestJSON(requestId: requestId, service: service, priority: "urgent"))
            try await eventually("the request is rejected") {
                try await h.deliveryEvents().contains { event in
                    event["type"] as? String == "DeliveryRejected"
                        && ((event["data"] as? [String: Any])?["reason"] as? String) == "priority must be transactional or bulk, got 'urgent'"
                }
            }
        }
    }
}
