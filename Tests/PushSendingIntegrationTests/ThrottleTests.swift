import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushSending
import PushStore
import PushTestSupport
import Synchronization
import Testing

/// `throttle.perSecond` at the provider (docs/senders.md, "Throttle"): the senders take a
/// throttled delivery's send slots from one timeline in PostgreSQL, so what reaches the provider
/// stays under the rate across instances, a SIGKILL and a restart, while an unthrottled delivery
/// beside it goes at the senders' own pace.
@Suite("Throttle at the provider", .serialized)
struct ThrottleTests {
    /// The busiest one-second window `[t, t + 1 s)` starting at an arrival (ms times): its start
    /// and how many arrivals it holds.
    static func peakWindow(_ sorted: [Int64]) -> (start: Int64, count: Int) {
        var best = (start: Int64(0), count: 0)
        var end = 0
        for start in sorted.indices {
            while end < sorted.count, sorted[end] < sorted[start] + 1000 { end += 1 }
            if end - start > best.count { best = (sorted[start], end - start) }
        }
        return best
    }

    /// The most arrivals in any one-second window starting at an arrival (ms times).
    static func peakPerSecond(_ times: [Int64]) -> Int {
        peakWindow(times.sorted()).count
    }

    /// The arrivals per 100 ms from a second before the busiest one-second window to its end: what
    /// a failed peak shows (a burst, or arrivals bunched by the host's scheduling).
    static func peakHistogram(_ times: [Int64]) -> String {
        let sorted = times.sorted()
        let best = peakWindow(sorted)
        let from = best.start - 1000
        var buckets = [Int](repeating: 0, count: 20)
        for time in sorted where time >= from && time < best.start + 1000 { buckets[Int((time - from) / 100)] += 1 }
        let offset = Double(best.start - (sorted.first ?? 0)) / 1000
        return
            "peak window \(offset) s after the first arrival; per 100 ms from 1 s before it: \(buckets.prefix(10).map(String.init).joined(separator: " ")) | \(buckets.suffix(10).map(String.init).joined(separator: " "))"
    }

    /// When each arrival of `messages` reached the simulator (ms since the epoch), re-sends included.
    static func arrivalTimes(_ h: FCMSenderHarness, _ messages: [FCMMessagePlanned]) -> [Int64] {
        arrivalTimes(h, ids: messages.map(\.messageId))
    }

    static func arrivalTimes<H: SenderHarness>(_ h: H, ids: [UUID]) -> [Int64] {
        let ids = Set(ids.map { $0.uuidString.lowercased() })
        return h.simulator.state.notifications(limit: 1_000_000).compactMap { entry in
            entry.mId.map { ids.contains($0.lowercased()) } == true ? entry.receivedAtMs : nil
        }
    }

    static func messages(_ h: FCMSenderHarness, count: Int, deliveryId: String, throttle: Int?) -> [FCMMessagePlanned] {
        (0..<count).map { _ in
            var message = h.message(token: FCMSenderHarness.token())
            message.deliveryId = deliveryId
            message.throttlePerSecond = throttle
            return message
        }
    }

    @Test(
        "600 messages throttled to 40/s reach FCM at most 40 in any second through two fcm-sender executables, one SIGKILLed mid-way, and a restarted third; each message arrives, re-sends within the resend window; 400 unthrottled messages beside them are not held to the rate"
    )
    func throttleAcrossInstancesKillAndRestart() async throws {
        try await FCMSenderHarness.with(settings: ["FCM_SENDER_COMMIT_INTERVAL_MS": "100", "FCM_SENDER_MAX_IN_FLIGHT": "50"]) { h in
            let rate = 40
            let throttled = Self.messages(h, count: 600, deliveryId: "throttled-\(h.suffix)", throttle: rate)
            let free = Self.messages(h, count: 400, deliveryId: "free-\(h.suffix)", throttle: nil)
            // Interleaved on the topic: the unthrottled records are read among the throttled ones.
            var both: [FCMMessagePlanned] = []
            for index in 0..<max(throttled.count, free.count) {
                if index < throttled.count { both.append(throttled[index]) }
                if index < free.count { both.append(free[index]) }
            }
            try await h.publish(both)

            let (portA, portB, portC) = (try EphemeralPort.next(), try EphemeralPort.next(), try EphemeralPort.next())
            let first = try h.startExecutable(opsPort: portA)
            defer { first.killIfRunning() }
            let second = try h.startExecutable(opsPort: portB)
            defer { second.killIfRunning() }
            try await first.waitUntilReady(port: portA, within: .seconds(90))
            try await second.waitUntilReady(port: portB, within: .seconds(90))

            try await eventually(within: .seconds(120), "a third of the throttled delivery reached FCM") {
                h.arrivals(throttled).reduce(0, +) >= throttled.count / 3
            }
            let window = try await h.resendWindow(opsPort: portA)
            let firstArrival = Self.arrivalTimes(h, throttled).min() ?? 0
            print("throttle run: SIGKILL \(Double(Int64(Date().timeIntervalSince1970 * 1000) - firstArrival) / 1000) s after the first throttled arrival")
            await first.kill()
            let third = try h.startExecutable(opsPort: portC)
            defer { third.killIfRunning() }

            let results = try await h.waitForResults(throttled.count + free.count, within: .seconds(180))
            let throttledTimes = Self.arrivalTimes(h, throttled)
            let freeTimes = Self.arrivalTimes(h, free)
            let peak = Self.peakPerSecond(throttledTimes)
            let span = Double((throttledTimes.max() ?? 0) - (throttledTimes.min() ?? 0)) / 1000
            let freePeak = Self.peakPerSecond(freeTimes)
            h.logger.notice(
                "Throttle run",
                metadata: [
                    "throttled.peak": "\(peak)", "throttled.arrivals": "\(throttledTimes.count)", "throttled.span.s": "\(span)",
                    "free.peak": "\(freePeak)", "resend.window": "\(window)",
                ])
            print(
                "throttle run: throttled peak \(peak)/s over \(throttledTimes.count) arrivals in \(span) s; unthrottled peak \(freePeak)/s; resend window \(window); \(Self.peakHistogram(throttledTimes))"
            )

            #expect(peak <= rate, "the throttled delivery reached FCM \(peak) times in one second (rate \(rate)); \(Self.peakHistogram(throttledTimes))")
            #expect(freePeak > 2 * rate, "the unthrottled delivery is not held to the other's rate (its peak: \(freePeak)/s)")
            let arrivals = h.arrivals(throttled) + h.arrivals(free)
            #expect(arrivals.allSatisfy { $0 >= 1 }, "every message reached FCM")
            let resent = arrivals.reduce(0, +) - arrivals.count
            #expect(resent <= window, "re-sends (\(resent)) within what push_sender_resend_window showed before the SIGKILL (\(window))")
            let sent = Set(results.filter { $0.type == "MessageSent" }.map(\.messageId))
            #expect(sent.count == throttled.count + free.count, "every message ends MessageSent")

            // Across the instances: the throttled messages waited in memory or on the retry topic.
            let deferred = try await h.metric("push_sender_throttle_waits_total", labels: [#"wait="deferred""#], opsPort: portB) ?? 0
            let held = try await h.metric("push_sender_throttle_waits_total", labels: [#"wait="held""#], opsPort: portB) ?? 0
            #expect(deferred + held > 0, "the surviving instance paced throttled messages")
            let late = try await h.metric("push_sender_throttle_waits_total", labels: [#"wait="late""#], opsPort: portB) ?? 0
            print("throttle run, surviving instance: \(Int(held)) held, \(Int(deferred)) deferred, \(Int(late)) late (a new slot taken)")
            await second.terminate()
            await third.terminate()
            #expect(second.terminationStatus == 0, "\(second.logTail())")
            #expect(third.terminationStatus == 0, "\(third.logTail())")
        }
    }

    @Test(
        "a throttled backlog of 1,500 messages at 60/s queued before the fcm-sender starts holds nobody up: with MAX_HELD and the throttled budget at 100, 300 unthrottled messages published once the backlog is set aside are all sent within seconds, the throttled delivery stays at most 60 a second and every message arrives"
    )
    func throttledBacklogHoldsNobodyUp() async throws {
        try await FCMSenderHarness.with(settings: ["FCM_SENDER_MAX_IN_FLIGHT": "50", "FCM_SENDER_MAX_HELD": "100", "FCM_SENDER_MAX_HELD_THROTTLED": "100"]) {
            h in
            let rate = 60
            let budget = 100
            let throttled = Self.messages(h, count: 1_500, deliveryId: "backlog-\(h.suffix)", throttle: rate)
            let free = Self.messages(h, count: 300, deliveryId: "free-\(h.suffix)", throttle: nil)
            // The backlog is queued before the sender starts (senders were down).
            try await h.publish(throttled)

            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort)
            defer { sender.killIfRunning() }
            try await sender.waitUntilReady(port: opsPort, within: .seconds(90))
            // The most throttled records the sender held at once, sampled from its gauge.
            let sampling = Task {
                var most = 0.0
                while !Task.isCancelled {
                    if let held = try? await h.metric("push_sender_held_records", labels: [#"lane="throttled""#], opsPort: opsPort) { most = max(most, held) }
                    try? await Task.sleep(for: .milliseconds(100))
                }
                return most
            }
            defer { sampling.cancel() }
            // The sender read the backlog and set it aside for the slots (and read some back).
            try await eventually(within: .seconds(90), "the backlog is set aside for its slots") {
                try await h.metric("push_sender_throttle_waits_total", labels: [#"lane="bulk""#, #"wait="deferred""#], opsPort: opsPort) ?? 0 >= 1_200
            }
            try await Task.sleep(for: .seconds(1))
            // Behind the backlog, the unthrottled messages would wait for what is left of it at
            // 60 a second (about 20 s): the bound is three quarters of that, whatever the
            // machine's load (on two busy cores the 300 take up to 10 s to send).
            let backlogLeft = Double(throttled.count - h.arrivals(throttled).reduce(0, +)) / Double(rate)
            let published = Int64(Date().timeIntervalSince1970 * 1000)
            try await h.publish(free)
            try await eventually(within: .seconds(100), "the unthrottled delivery reaches FCM") { h.arrivals(free).allSatisfy { $0 >= 1 } }
            let freeTimes = Self.arrivalTimes(h, free)
            let freeDone = Double((freeTimes.max() ?? published) - published) / 1000
            let throttledBefore = h.arrivals(throttled).reduce(0, +)
            print(
                "throttled backlog: \(freeTimes.count) of 300 unthrottled messages sent, the last \(freeDone) s after their publication; \(throttledBefore) throttled sent by then"
            )
            #expect(
                freeDone <= backlogLeft * 0.75,
                "the unthrottled delivery waited behind the throttled backlog: its last message arrived \(freeDone) s after its publication, the backlog needed \(backlogLeft) s more"
            )

            _ = try await h.waitForResults(throttled.count + free.count, within: .seconds(180))
            sampling.cancel()
            let mostHeld = await sampling.value
            let throttledTimes = Self.arrivalTimes(h, throttled)
            let peak = Self.peakPerSecond(throttledTimes)
            let span = Double((throttledTimes.max() ?? 0) - (throttledTimes.min() ?? 0)) / 1000
            print(
                "throttled backlog: peak \(peak)/s over \(throttledTimes.count) arrivals in \(span) s; at most \(Int(mostHeld)) throttled records held (budget \(budget))"
            )
            #expect(peak <= rate, "the throttled delivery reached FCM \(peak) times in one second (rate \(rate))")
            #expect((h.arrivals(throttled) + h.arrivals(free)).allSatisfy { $0 >= 1 }, "every message reached FCM")
            #expect(mostHeld > 0, "the throttled topic's reader held the set-aside records")
            #expect(mostHeld <= Double(budget), "\(Int(mostHeld)) throttled records held at once (budget \(budget))")
            await sender.terminate()
            #expect(sender.terminationStatus == 0, "\(sender.logTail())")
        }
    }

    @Test(
        "records an older fcm-sender set aside on the retry topic for their throttle slot (notBefore, header push-throttle-slot) are still read back there and sent: each once, none before its slot, at most 20 a second"
    )
    func olderRetryTopicRecords() async throws {
        try await FCMSenderHarness.with { h in
            let rate = 20
            var messages = Self.messages(h, count: 100, deliveryId: "older-\(h.suffix)", throttle: rate)
            // As the previous version wrote them: slots 1 / (0.9 × 20) s apart, a few seconds ahead.
            let start = Date().addingTimeInterval(4)
            var slots: [UUID: Int64] = [:]
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            var records: [KafkaProducerRecord] = []
            for index in messages.indices {
                let slot = start.addingTimeInterval(Double(index) / (0.9 * Double(rate)))
                let milliseconds = Int64((slot.timeIntervalSince1970 * 1000).rounded(.up))
                messages[index].notBefore = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
                slots[messages[index].messageId] = milliseconds
                var record = try KafkaProducerRecord(
                    topic: h.retryTopic.name, event: EventEnvelope(key: messages[index].recordKey, payload: messages[index]))
                record.headers.append(KafkaHeader(name: "push-throttle-slot", string: String(milliseconds)))
                records.append(record)
            }
            for result in await producer.send(records) { _ = try result.get() }
            await producer.close()
            // The previous version took those slots from the delivery's timeline: a slot taken
            // now (one of those went stale before the sender read it) comes after them.
            let end = start.addingTimeInterval(Double(messages.count) / (0.9 * Double(rate)))
            try await h.postgres.query(
                "INSERT INTO push.delivery_throttle (delivery_id, next_slot, per_second) VALUES (\(messages[0].deliveryId), \(end), \(rate))", logger: h.logger)

            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort)
            defer { sender.killIfRunning() }
            let results = try await h.waitForResults(messages.count, within: .seconds(90))
            #expect(Set(results.filter { $0.type == "MessageSent" }.map(\.messageId)).count == messages.count, "every message ends MessageSent")
            #expect(h.arrivals(messages) == Array(repeating: 1, count: messages.count), "each message reached FCM once")
            let early = h.simulator.state.notifications(limit: 1_000_000).filter { entry in
                guard let id = entry.mId.flatMap({ UUID(uuidString: $0) }), let slot = slots[id] else { return false }
                return entry.receivedAtMs < slot
            }
            #expect(early.isEmpty, "\(early.count) messages reached FCM before their slot")
            let peak = Self.peakPerSecond(Self.arrivalTimes(h, messages))
            print("older retry-topic records: peak \(peak)/s over \(messages.count) arrivals, \(early.count) before their slot")
            #expect(peak <= rate, "the throttled delivery reached FCM \(peak) times in one second (rate \(rate))")
            await sender.terminate()
            #expect(sender.terminationStatus == 0, "\(sender.logTail())")
        }
    }

    @Test(
        "one delivery throttled to 30/s with 200 iOS and 200 Android messages: the apns-sender and fcm-sender executables share its timeline, at most 30 arrivals in any second across both simulators"
    )
    func bothProviders() async throws {
        try await FCMSenderHarness.with { f in
            try await APNSSenderHarness.with { a in
                let rate = 30
                let deliveryId = "both-\(f.suffix)"
                let android = Self.messages(f, count: 200, deliveryId: deliveryId, throttle: rate)
                let ios = (0..<200).map { _ in
                    var message = a.message(token: APNSSenderHarness.token(), deliveryId: deliveryId)
                    message.throttlePerSecond = rate
                    return message
                }
                try await f.publish(android)
                try await a.publish(ios)
                let (fcmPort, apnsPort) = (try EphemeralPort.next(), try EphemeralPort.next())
                let fcm = try f.startExecutable(opsPort: fcmPort)
                defer { fcm.killIfRunning() }
                let apns = try a.startExecutable(opsPort: apnsPort)
                defer { apns.killIfRunning() }
                _ = try await f.waitForResults(android.count, within: .seconds(120))
                _ = try await a.waitForResults(ios.count, within: .seconds(120))
                let fcmTimes = Self.arrivalTimes(f, ids: android.map(\.messageId))
                let apnsTimes = Self.arrivalTimes(a, ids: ios.map(\.messageId))
                let times = fcmTimes + apnsTimes
                let peak = Self.peakPerSecond(times)
                let span = Double(times.max()! - times.min()!) / 1000
                print("throttle both providers: peak \(peak)/s over \(times.count) arrivals (APNs \(apnsTimes.count), FCM \(fcmTimes.count)) in \(span) s")
                #expect(peak <= rate, "the delivery reached APNs and FCM together \(peak) times in one second (rate \(rate))")
                #expect((f.arrivals(android) + a.arrivals(ios)).allSatisfy { $0 >= 1 }, "every message arrived")
                // Each sender alone at 25/s would take about 7.8 s for its 200; sharing one
                // timeline, the 400 take about 15.7 s.
                #expect(span >= 12, "400 messages at 25/s took only \(span) s")
                await fcm.terminate()
                await apns.terminate()
            }
        }
    }

    @Test(
        "two instances' ThrottleSlots reserving one delivery's slots at once against the real PostgreSQL: on the database's timeline every slot is distinct and a full interval apart"
    )
    func sharedTimeline() async throws {
        try await FCMSenderHarness.with { h in
            let deliveryId = "timeline-\(h.suffix)"
            let rate = ThrottleRate(perSecond: 50)
            let one = ThrottleSlots(postgres: h.postgres, provider: "fcm", logger: h.logger)
            let other = ThrottleSlots(postgres: h.postgres, provider: "apns", logger: h.logger)
            let batches = 50
            let slots = try await withThrowingTaskGroup(of: [Date].self) { group in
                for slots in [one, other, one, other] {
                    group.addTask {
                        var taken: [Date] = []
                        for _ in 0..<batches {
                            var batch = try await slots.reserveOnTimeline(deliveryId: deliveryId, rate: rate).batch
                            // Taken at the batch's own first instant: nothing is stale.
                            while let slot = batch.take(now: batch.next) { taken.append(slot) }
                        }
                        return taken
                    }
                }
                return try await group.reduce(into: [Date]()) { $0 += $1 }
            }
            let count = 4 * batches * rate.batchSize
            let sorted = slots.sorted()
            #expect(sorted.count == count)
            #expect(Set(sorted).count == count)
            let interval = Double(rate.intervalMicroseconds) / 1_000_000
            // The database's timestamps have microseconds; a Date near 2026 resolves about 0.2 µs.
            let closest = zip(sorted, sorted.dropFirst()).map { $1.timeIntervalSince($0) }.min() ?? 0
            #expect(closest >= interval - 0.000_002, "two slots \(closest) s apart (interval \(interval) s)")
            let length = sorted.last!.timeIntervalSince(sorted.first!)
            #expect(length >= Double(count - 1) * interval - 0.000_1)
            let rows = try await h.postgres.query(
                "SELECT per_second FROM push.delivery_throttle WHERE delivery_id = \(deliveryId)", logger: h.logger)
            var perSecond: [Int] = []
            for try await value in rows.decode(Int.self) { perSecond.append(value) }
            #expect(perSecond == [50])
        }
    }
}
