import Foundation
import PostgresNIO
import PushEvents
import PushPlanning
import PushSending
import PushTestSupport
import Testing

@testable import PushStore

/// Cancel and pause as the senders see them: `push.delivery_controls` (what the deliveries
/// projection writes from `DeliveryCancelled`, `DeliveryPaused`, `DeliveryResumed`; the planning
/// tests drive it through the admin API) against the real sender, broker and FCM simulator.
@Suite("Senders honour cancelled and paused deliveries", .serialized)
struct DeliveryControlTests {
    /// Sets a delivery's control as the deliveries projection does (a new version per change).
    static func setControl(_ h: FCMSenderHarness, _ deliveryId: String, _ state: String) async throws {
        try await h.postgres.query(
            """
            INSERT INTO push.delivery_controls AS c (delivery_id, state, changed_at, event_id) VALUES (\(deliveryId), \(state), now(), \(UUID()))
            ON CONFLICT (delivery_id) DO UPDATE SET state = excluded.state, changed_at = excluded.changed_at, event_id = excluded.event_id,
                version = nextval('push.delivery_control_versions')
            """,
            logger: h.logger)
    }

    static func messages(_ h: FCMSenderHarness, count: Int, deliveryId: String) -> [FCMMessagePlanned] {
        (0..<count).map { _ in
            var message = h.message(token: FCMSenderHarness.token())
            message.deliveryId = deliveryId
            return message
        }
    }

    /// When each message reached the simulator (ms since the epoch), by `_mId`.
    static func arrivalTimes(_ h: FCMSenderHarness) -> [String: Int64] {
        Dictionary(h.simulator.state.notifications(limit: 1_000_000).compactMap { entry in entry.mId.map { ($0.lowercased(), entry.receivedAtMs) } }) {
            first, _ in first
        }
    }

    @Test("cancelled mid-send: within a second nothing more of it reaches FCM, the rest end MessageCancelled, another delivery is unaffected")
    func cancelMidSend() async throws {
        try await FCMSenderHarness.with(settings: ["FCM_SENDER_MAX_IN_FLIGHT": "8", "FCM_SENDER_CONTROLS_REFRESH_MS": "200"]) { h in
            _ = h.simulator.state.updateFaults { $0.latencyMs = 10 }
            let cancelled = "cancel-\(h.suffix)"
            let other = "other-\(h.suffix)"
            let doomed = Self.messages(h, count: 3000, deliveryId: cancelled)
            let bystanders = Self.messages(h, count: 200, deliveryId: other)
            try await h.publish(doomed + bystanders)
            let (cancelledAtMs, results) = try await h.withSender {
                try await eventually("some of the delivery sent") { h.delivered >= 200 }
                try await Self.setControl(h, cancelled, "cancelled")
                let at = Int64(Date().timeIntervalSince1970 * 1000)
                return (at, try await h.waitForResults(doomed.count + bystanders.count, within: .seconds(120)))
            }
            let first = results.byMessageId
            let times = Self.arrivalTimes(h)
            var sent = 0
            var cancelledCount = 0
            for message in doomed {
                let id = message.messageId.uuidString.lowercased()
                let result = try #require(first[id], "every message has a result")
                switch result.type {
                case "MessageSent":
                    sent += 1
                    let arrived = try #require(times[id], "a sent message reached the simulator")
                    #expect(arrived <= cancelledAtMs + 1000, "nothing of the cancelled delivery reaches FCM a second after the cancel")
                case "MessageCancelled":
                    cancelledCount += 1
                    #expect(times[id] == nil, "a cancelled message never reached FCM")
                default:
                    Issue.record("unexpected \(result.type) for a message of the cancelled delivery")
                }
            }
            #expect(sent >= 200)
            #expect(cancelledCount > 1000, "most of the delivery was cancelled (sent \(sent))")
            #expect(Set(results.filter { doomed.map { $0.messageId.uuidString.lowercased() }.contains($0.messageId) }.map(\.messageId)).count == doomed.count)
            #expect(results.count == Set(results.map(\.messageId)).count, "exactly one result per message")
            for message in bystanders {
                #expect(first[message.messageId.uuidString.lowercased()]?.type == "MessageSent", "the other delivery goes on")
            }
        }
    }

    @Test("paused: nothing is sent, the messages wait on the retry topic through a SIGKILL of the sender; resumed: each sent exactly once")
    func pauseKillResume() async throws {
        try await FCMSenderHarness.with(settings: ["FCM_SENDER_PAUSE_RECHECK_MS": "300", "FCM_SENDER_CONTROLS_REFRESH_MS": "100"]) { h in
            let paused = "paused-\(h.suffix)"
            let messages = Self.messages(h, count: 50, deliveryId: paused)
            try await Self.setControl(h, paused, "paused")
            try await h.publish(messages)
            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort)
            defer { sender.killIfRunning() }
            try await sender.waitUntilReady(port: opsPort, within: .seconds(90))
            // Set aside on the retry topic at least once each, nothing sent.
            try await eventually(within: .seconds(90), "every paused message set aside") {
                Set(
                    try await h.records(h.retryTopic.name).compactMap { try? JSONSerialization.jsonObject(with: Data($0.value)) as? [String: Any] }
                        .compactMap { ($0["data"] as? [String: Any])?["messageId"] as? String }
                ).count == messages.count
            }
            try await Task.sleep(for: .seconds(1))
            #expect(h.delivered == 0, "nothing of a paused delivery reaches FCM")
            #expect(try await h.results().isEmpty, "a paused message has no final status")
            await sender.kill()

            try await Self.setControl(h, paused, "active")
            let results = try await h.withSender { try await h.waitForResults(messages.count, within: .seconds(120)) }
            #expect(results.allSatisfy { $0.type == "MessageSent" })
            #expect(h.arrivals(messages) == Array(repeating: 1, count: messages.count), "each message reached FCM exactly once")
        }
    }

    /// Two planner instances project `push.delivery-events` in parallel: a cancellation whose
    /// transaction took its version first can commit after a pause with a higher version was
    /// read. The sender's reader must still see it (before migration 25 it resumed after the
    /// highest version it had read, and never did).
    @Test("a cancellation committed after a later change was read is still seen by the senders' reader")
    func outOfOrderCommits() async throws {
        try await FCMSenderHarness.with { h in
            let (early, late) = ("early-\(h.suffix)", "late-\(h.suffix)")
            let projection = DeliveryProjection(name: "test.controls.\(h.suffix)", topic: "t")
            @Sendable func control(_ deliveryId: String, _ state: String, offset: Int64) -> [ProjectedEvent<DeliveryProjection.Event>] {
                [ProjectedEvent(topic: "t", partition: 0, offset: offset, event: .control(deliveryId: deliveryId, state: state, at: Date(), eventId: UUID()))]
            }
            let controls = DeliveryControls(postgres: h.postgres, refresh: .seconds(60), logger: h.logger)
            try await controls.read()
            let (takenStream, tookVersion) = AsyncStream<Void>.makeStream()
            let (commitStream, mayCommit) = AsyncStream<Void>.makeStream()
            try await withThrowingTaskGroup(of: Void.self) { group in
                // The cancellation: its version is taken, then its transaction waits.
                group.addTask {
                    try await h.postgres.withTransaction(logger: h.logger) { connection in
                        try await projection.apply(control(early, "cancelled", offset: 0), on: connection, logger: h.logger)
                        tookVersion.yield()
                        for await _ in commitStream { break }
                    }
                }
                for await _ in takenStream { break }
                // The pause takes a higher version and commits first; the reader sees it.
                try await h.postgres.withTransaction(logger: h.logger) { connection in
                    try await projection.apply(control(late, "paused", offset: 1), on: connection, logger: h.logger)
                }
                let versions = try await h.postgres.query(
                    "SELECT delivery_id, version FROM push.delivery_controls WHERE delivery_id IN (\(early), \(late))", logger: h.logger)
                var byDelivery: [String: Int64] = [:]
                for try await (deliveryId, version) in versions.decode((String, Int64).self) { byDelivery[deliveryId] = version }
                #expect(byDelivery[early] == nil, "the cancellation is not committed yet")
                try await controls.read()
                #expect(controls.state(of: late) == .paused)
                #expect(controls.state(of: early) == .active)
                // Now the cancellation commits, with the lower version.
                mayCommit.yield()
                try await group.waitForAll()
            }
            let versions = try await h.postgres.query(
                "SELECT (SELECT version FROM push.delivery_controls WHERE delivery_id = \(early)) < (SELECT version FROM push.delivery_controls WHERE delivery_id = \(late))",
                logger: h.logger)
            for try await lower in versions.decode(Bool.self) { #expect(lower, "the cancellation's version is the lower one: it committed out of order") }
            try await controls.read()
            #expect(controls.state(of: early) == .cancelled, "the late-committed cancellation is seen")
            #expect(controls.state(of: late) == .paused)
        }
    }
}
