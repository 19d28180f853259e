import Foundation
import PushEvents
import PushTestSupport
import Testing

/// Twins: the same message's record written twice (a sender SIGKILLed between setting a message
/// aside on the retry topic and storing its offset sets it aside again when it reads the record
/// again). The real fcm-sender, broker and FCM simulator; arrivals counted per `_mId` in the
/// simulator's log.
@Suite("A message recorded twice is sent once", .serialized)
struct SenderTwinTests {
    @Test("twins side by side on the retry topic, and twins arriving after the first copies were sent: each message reaches FCM once, one result each")
    func twinsAreSentOnce() async throws {
        try await FCMSenderHarness.with { h in
            let messages = (0..<40).map { _ in h.message(token: FCMSenderHarness.token()) }
            let together = Array(messages.prefix(20))
            let later = Array(messages.suffix(20))
            try await h.withSender {
                try await h.publish(together + together, to: h.retryTopic)
                try await h.publish(later, to: h.retryTopic)
                let results = try await h.waitForResults(messages.count, within: .seconds(60))
                #expect(results.allSatisfy { $0.type == "MessageSent" })
                // The second copies of `later`, after their first copies were sent.
                try await h.publish(later, to: h.retryTopic)
                try await Task.sleep(for: .seconds(3))
            }
            #expect(h.arrivals(messages) == Array(repeating: 1, count: messages.count), "each message reached FCM exactly once")
            let results = try await h.results()
            #expect(results.count == messages.count, "one result per message: \(results.count)")
            #expect(Set(results.map(\.messageId)).count == messages.count)
        }
    }
}
