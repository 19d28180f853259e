import Foundation
import ProviderSimulatorCore
import PushEvents
import PushTestSupport
import Testing

/// The priority lanes in the real fcm-sender executable (docs/senders.md, "Lanes"): a
/// transactional message does not wait behind a bulk backlog.
@Suite("Sender lanes", .serialized)
struct SenderLaneTests {
    @Test(
        "a transactional message reaches FCM while a bulk backlog of 4,000 messages waits: its lane has its own consumer, budget and connection"
    )
    func transactionalBeforeBacklog() async throws {
        try await FCMSenderHarness.with { h in
            // A slow provider and 10 bulk sends in flight: about 50 bulk messages a second, so
            // the backlog needs more than a minute to drain.
            _ = h.simulator.state.updateFaults { $0.latencyMs = 200 }
            let bulk = (0..<4_000).map { _ in h.message(token: FCMSenderHarness.token()) }
            try await h.publish(bulk)

            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort, settings: ["FCM_SENDER_MAX_IN_FLIGHT": "10", "FCM_SENDER_MAX_HELD": "2000"])
            defer { sender.killIfRunning() }
            // The bulk lane is sending (its consumer has its partitions) before the transactional
            // message is published: the backlog is in front of the sender.
            try await eventually(within: .seconds(60), "the bulk lane sends") { h.arrivals(bulk).reduce(0, +) >= 20 }

            let transactional = h.message(token: FCMSenderHarness.token())
            try await h.publish([transactional], to: h.topics.fcmTransactionalMessages)
            try await eventually(within: .seconds(60), "the transactional message reaches FCM") { h.arrivals([transactional]) == [1] }
            let bulkSent = h.arrivals(bulk).reduce(0, +)
            // On a shared topic it would have waited for the 4,000 bulk messages before it.
            #expect(bulkSent < bulk.count / 2, "the transactional message arrived after \(bulkSent) of \(bulk.count) bulk messages")

            // Each lane counts its own sends.
            try await eventually(within: .seconds(20), "the transactional lane's metric") {
                try await h.metric("push_sender_messages_total", labels: [#"lane="transactional""#, #"outcome="sent""#], opsPort: opsPort) == 1
            }
            #expect(try await h.metric("push_sender_messages_total", labels: [#"lane="bulk""#, #"outcome="sent""#], opsPort: opsPort) ?? 0 >= 20)
            await sender.terminate()
            #expect(sender.terminationStatus == 0, "\(sender.logTail())")
            // Its result is published like any other.
            let results = try await h.results().byMessageId
            #expect(results[transactional.messageId.uuidString.lowercased()]?.type == "MessageSent")
        }
    }
}
