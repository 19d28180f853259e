import Foundation
import Kafka
import MetricsTestKit
import PushEvents
import Synchronization
import Testing

@testable import PushSending

/// The whole `MessageSender` on in-memory parts (`InMemorySender`): what a sender instance
/// publishes, stores and hands back, observed as the broker would see it.
@Suite("MessageSender in memory: reading, outcomes, publishing, offsets, shutdown")
struct MessageSenderTests {
    static let retries = InMemorySender.topics.retries

    /// Runs `body` against a started sender, then stops it gracefully and waits for it to end.
    func withSender(_ sender: InMemorySender, _ body: (InMemorySender) async throws -> Void) async throws {
        let running = Task { try await sender.group.run() }
        do {
            try await body(sender)
        } catch {
            await sender.group.triggerGracefulShutdown()
            _ = await running.result
            throw error
        }
        await sender.group.triggerGracefulShutdown()
        try await running.value
    }

    @Test("a result names the language texts and the A/B variant its message carried, and none for the default texts")
    func resultsNameTheLanguageAndVariant() async throws {
        let sender = InMemorySender()
        var french = InMemorySender.message()
        french.language = "fr"
        french.variant = "B"
        let plain = InMemorySender.message()
        try await withSender(sender) { sender in
            try sender.deliver([french, plain], partition: 0)
            try await sender.until("2 results") { sender.results().count == 2 }
        }
        var named: [String: String] = [:]
        for event in sender.sink.events(on: InMemorySender.topics.results) {
            let message = (event["data"] as? [String: Any])?["message"] as? [String: Any]
            if let id = message?["messageId"] as? String {
                named[id.lowercased()] = "\(message?["language"] as? String ?? "none") \(message?["variant"] as? String ?? "none")"
            }
        }
        #expect(named == [french.messageId.uuidString.lowercased(): "fr B", plain.messageId.uuidString.lowercased(): "none none"])
    }

    @Test("every message of two partitions is sent once, its MessageSent stored, and each partition's offset stored and committed past its last record")
    func sendsAll() async throws {
        let sender = InMemorySender()
        let first = (0..<10).map { _ in InMemorySender.message() }
        let second = (0..<7).map { _ in InMemorySender.message() }
        try await withSender(sender) { sender in
            try sender.deliver(first, partition: 0)
            try sender.deliver(second, partition: 1)
            try await sender.until("17 results") { sender.results().count == 17 }
            try await sender.until("offsets stored") { sender.stored(partition: 0) == 10 && sender.stored(partition: 1) == 7 }
        }
        let results = sender.results()
        for message in first + second { #expect(results[message.messageId] == ["MessageSent"]) }
        #expect(sender.transport.sent.withLock { $0.count } == 17)
        let committed = sender.consumer.committed.withLock { $0 }
        #expect(committed[KafkaTopicPartition(topic: InMemorySender.topics.messages, partition: 0)] == 10)
        #expect(committed[KafkaTopicPartition(topic: InMemorySender.topics.messages, partition: 1)] == 7)
        #expect(sender.consumer.isClosed)
    }

    @Test("each provider answer ends as its events say: sent, a dead token quarantined, a soft failure, a retry on the retry topic as the next attempt")
    func outcomeClasses() async throws {
        let sent = InMemorySender.message()
        let dead = InMemorySender.message()
        let refused = InMemorySender.message()
        let transient = InMemorySender.message()
        let transport = MemoryTransport { message in
            switch message.messageId {
            case dead.messageId: .tokenInvalid(reason: "Unregistered", invalidSince: nil)
            case refused.messageId: .failed(reason: "PayloadTooLarge")
            case transient.messageId: .retry(reason: "ServiceUnavailable")
            default: .sent(providerMessageId: "p")
            }
        }
        let sender = InMemorySender(transport: transport)
        try await withSender(sender) { sender in
            try sender.deliver([sent, dead, refused, transient])
            try await sender.until("four outcomes stored") { sender.stored() == 4 }
        }
        let results = sender.results()
        #expect(results[sent.messageId] == ["MessageSent"])
        #expect(results[dead.messageId] == ["MessageFailed"])
        #expect(results[refused.messageId] == ["MessageFailed"])
        #expect(results[transient.messageId] == nil, "a retry is not a result")
        let failures = sender.sink.events(on: InMemorySender.topics.results).compactMap { $0["data"] as? [String: Any] }
            .filter { $0["failureType"] != nil }.map { "\($0["failureType"]!) \($0["reason"]!)" }.sorted()
        #expect(failures == ["hard Unregistered", "soft PayloadTooLarge"])
        #expect(sender.sink.events(on: InMemorySender.topics.subscriptions).map { $0["type"] as? String } == ["SubscriptionDisabled"])
        let retry = try #require(sender.requeued().first)
        #expect(sender.requeued().count == 1)
        #expect(retry.messageId == transient.messageId && retry.attempt == 2)
        #expect(retry.notBefore.map { $0 > Date() } == true)
    }

    @Test("a record that is not a message goes to the dead letters with the reason; the messages after it are sent and the offset passes it")
    func deadLetter() async throws {
        let sender = InMemorySender()
        let after = InMemorySender.message()
        try await withSender(sender) { sender in
            sender.deliverRaw("not json")
            try sender.deliver([after])
            try await sender.until("both finished") { sender.stored() == 2 }
        }
        let letters = sender.deadLetters.letters.withLock { $0 }
        #expect(letters.map(\.offset) == [0])
        #expect(letters.first?.reason.isEmpty == false)
        #expect(sender.results()[after.messageId] == ["MessageSent"])
    }

    @Test("a message recorded twice is sent once; the twin is finished without an event")
    func twins() async throws {
        let sender = InMemorySender()
        let message = InMemorySender.message()
        try await withSender(sender) { sender in
            try sender.deliver([message, message])
            try await sender.until("both finished") { sender.stored() == 2 }
            try sender.deliver([message])
            try await sender.until("the late twin finished") { sender.stored() == 3 }
        }
        #expect(sender.transport.sent.withLock { $0.count } == 1)
        #expect(sender.results()[message.messageId] == ["MessageSent"])
    }

    @Test("a cancelled delivery's message is cancelled and a paused one's set aside, neither sent; another delivery's goes on")
    func controls() async throws {
        let sender = InMemorySender()
        sender.controls.set("cancelled", .cancelled)
        sender.controls.set("paused", .paused)
        let cancelled = InMemorySender.message(deliveryId: "cancelled")
        let paused = InMemorySender.message(deliveryId: "paused")
        let active = InMemorySender.message(deliveryId: "active")
        try await withSender(sender) { sender in
            try sender.deliver([cancelled, paused, active])
            try await sender.until("three finished") { sender.stored() == 3 }
        }
        #expect(sender.transport.sent.withLock { $0.map(\.messageId) } == [active.messageId])
        #expect(sender.results()[cancelled.messageId] == ["MessageCancelled"])
        #expect(sender.requeued().map(\.messageId) == [paused.messageId])
        #expect(sender.requeued().first?.attempt == 1)
    }

    @Test("a message read after its validUntil expires without a send")
    func expired() async throws {
        let sender = InMemorySender()
        let late = InMemorySender.message(validFor: -1)
        try await withSender(sender) { sender in
            try sender.deliver([late])
            try await sender.until("finished") { sender.stored() == 1 }
        }
        #expect(sender.transport.sent.withLock { $0.isEmpty })
        #expect(sender.results()[late.messageId] == ["MessageExpired"])
    }

    @Test("the broker refusing the results for a while: they are published again until stored, once each, and only then is the offset stored")
    func brokerFailures() async throws {
        let sender = InMemorySender()
        sender.sink.failing.withLock { $0 = 3 }
        let messages = (0..<3).map { _ in InMemorySender.message() }
        try await withSender(sender) { sender in
            try sender.deliver(messages)
            try await sender.until("stored after the failures") { sender.stored() == 3 }
        }
        let results = sender.results()
        for message in messages { #expect(results[message.messageId] == ["MessageSent"]) }
        #expect(sender.transport.sent.withLock { $0.count } == 3, "sent once each: publishing again does not send again")
    }

    /// `push_sender_resend_window` as the sender's metrics show it (what an operator, and chaos,
    /// read just before a SIGKILL).
    static func resendWindow(_ metrics: TestMetrics) -> Double? {
        try? metrics.expectGauge("push_sender_resend_window", [("provider", "apns"), ("lane", "bulk")]).lastValue
    }

    @Test("while the broker does not acknowledge the results, push_sender_resend_window shows every record sent and held, not what the batch found")
    func resendWindowWhileThePublisherWaits() async throws {
        let metrics = TestMetrics()
        let settings = SenderSettings(group: "test-sender", maxInFlight: 16, maxHeld: 8, retryBaseMilliseconds: 1_000)
        let sender = InMemorySender(settings: settings, metrics: metrics)
        sender.sink.stalled.withLock { $0 = true }
        try await withSender(sender) { sender in
            // One batch of 20: 8 are sent (answered at once) and held, their results unpublished;
            // the reader waits for room.
            try sender.deliver((0..<20).map { _ in InMemorySender.message() })
            try await sender.until("8 sent") { sender.transport.sent.withLock { $0.count } == 8 }
            try await sender.until("a window of 8") { Self.resendWindow(metrics) == 8 }
            #expect(sender.stored() == nil, "nothing is finished while the results wait")
            sender.sink.stalled.withLock { $0 = false }
            try await sender.until("20 results") { sender.results().count == 20 }
            try await sender.until("the window back to 0 once committed") { Self.resendWindow(metrics) == 0 }
        }
    }

    @Test("while every in-flight permit waits for an answer, push_sender_resend_window counts the sends in flight")
    func resendWindowWhileSendsWait() async throws {
        let metrics = TestMetrics()
        let transport = MemoryTransport { _ in nil }
        let settings = SenderSettings(group: "test-sender", maxInFlight: 4, maxHeld: 64, retryBaseMilliseconds: 1_000)
        let sender = InMemorySender(transport: transport, settings: settings, metrics: metrics)
        try await withSender(sender) { sender in
            try sender.deliver((0..<10).map { _ in InMemorySender.message() })
            try await sender.until("4 in flight") { transport.inFlight.withLock { $0.count } == 4 }
            // The four sent and the fifth, begun and waiting for a permit.
            try await sender.until("a window of 5") { Self.resendWindow(metrics) == 5 }
            while sender.results().count < 10 {
                transport.release(.sent(providerMessageId: "ok"))
                try await Task.sleep(for: .milliseconds(2))
            }
        }
    }

    @Test("stopping with sends in flight waits for their answers and publishes them; a retry waiting in memory is handed back unchanged; all committed")
    func shutdownInFlight() async throws {
        let transport = MemoryTransport { _ in nil }
        let sender = InMemorySender(transport: transport)
        let inFlight = (0..<4).map { _ in InMemorySender.message() }
        let waiting = InMemorySender.message(attempt: 3, notBefore: Date().addingTimeInterval(600))
        let running = Task { try await sender.group.run() }
        try sender.deliver(inFlight + [waiting])
        try await sender.until("four in flight") { transport.inFlight.withLock { $0.count } == 4 }
        #expect(sender.stored() == nil, "nothing finished yet")
        await sender.group.triggerGracefulShutdown()
        try await Task.sleep(for: .milliseconds(50))
        #expect(!sender.consumer.isClosed, "the sender waits for its sends in flight")
        transport.release(.sent(providerMessageId: "late"))
        try await running.value

        let results = sender.results()
        for message in inFlight { #expect(results[message.messageId] == ["MessageSent"]) }
        let handedBack = sender.requeued()
        #expect(handedBack.map(\.messageId) == [waiting.messageId])
        #expect(handedBack.first?.attempt == 3)
        // Written unchanged: its time as the record had it (milliseconds).
        #expect(abs((handedBack.first?.notBefore ?? .distantPast).timeIntervalSince(waiting.notBefore!)) < 0.001)
        #expect(sender.consumer.committed.withLock { $0[KafkaTopicPartition(topic: InMemorySender.topics.messages, partition: 0)] } == 5)
    }

    @Test(
        "stopping while a provider never answers ends after answersOnStop: the answered are published and committed, the unanswered stay unfinished for the next owner"
    )
    func shutdownUnanswered() async throws {
        // Answers the first two at once; the last two never (a provider gone silent).
        let answered = Mutex(0)
        let transport = MemoryTransport { _ in
            answered.withLock { count in
                defer { count += 1 }
                return count < 2 ? .sent(providerMessageId: "quick") : nil
            }
        }
        var settings = SenderSettings(group: "test-sender", maxInFlight: 16, maxHeld: 64, retryBaseMilliseconds: 1_000)
        settings.answersOnStopMilliseconds = 300
        let sender = InMemorySender(transport: transport, settings: settings)
        let messages = (0..<4).map { _ in InMemorySender.message() }
        let running = Task { try await sender.group.run() }
        try sender.deliver(messages)
        try await sender.until("two answered, two in flight") { transport.inFlight.withLock { $0.count } == 2 && sender.results().count == 2 }
        try await sender.until("the answered stored") { sender.stored() == 2 }
        let clock = ContinuousClock()
        let stopping = clock.now
        await sender.group.triggerGracefulShutdown()
        try await running.value
        let took = clock.now - stopping
        #expect(took >= .milliseconds(300) && took < .seconds(2), "waited for the answers 300 ms, then stopped: \(took)")
        #expect(sender.consumer.isClosed)
        let results = sender.results()
        #expect(messages.prefix(2).allSatisfy { results[$0.messageId] == ["MessageSent"] })
        #expect(messages.suffix(2).allSatisfy { results[$0.messageId] == nil }, "no outcome for a send without an answer")
        #expect(
            sender.consumer.committed.withLock { $0[KafkaTopicPartition(topic: InMemorySender.topics.messages, partition: 0)] } == 2,
            "the committed offset stops at the first unanswered record: the next owner reads it again")
        // A late answer after the stop publishes nothing.
        transport.release(.sent(providerMessageId: "late"))
        try await Task.sleep(for: .milliseconds(50))
        #expect(sender.results().count == 2)
    }

    @Test("a throttled delivery's messages are each sent at a slot of its timeline, none before it")
    func throttled() async throws {
        let sender = InMemorySender()
        let messages = (0..<5).map { _ in InMemorySender.message(throttlePerSecond: 50) }
        let started = Date()
        try await withSender(sender) { sender in
            try sender.deliver(messages)
            try await sender.until("five sent") { sender.stored() == 5 }
        }
        #expect(sender.transport.sent.withLock { $0.count } == 5)
        // Five slots 20 ms apart: the last is at least 80 ms after the first.
        #expect(Date().timeIntervalSince(started) >= 0.08)
    }
}
