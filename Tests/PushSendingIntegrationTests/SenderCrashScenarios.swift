import Foundation
import PushTestSupport
import Testing

/// The instance, rebalance and crash scenarios both senders must pass (APNSSenderCrashTests,
/// FCMSenderCrashTests); the simulator's log proves what reached the provider, per `_mId`.
extension SenderHarness {
    /// A second in-process instance joins while `messages` are sent and later leaves (two
    /// cooperative rebalances): every message reaches the simulator exactly once, one result each.
    /// The simulator should answer slowly enough (about 20 ms) for the stream to outlast both:
    /// 500 sends before the join, 2,500 with both instances, and the rest after the leave
    /// (5,000 messages leave about 2,000 for after it).
    func rebalanceScenario(_ messages: [Message]) async throws {
        try await publish(messages)
        let settings = ["\(Self.settingsPrefix)_MAX_IN_FLIGHT": "10"]
        try await withSender(settings: settings) {
            try await eventually("the first instance sends") { delivered >= 500 }
            // A second member joins (partitions move away from the first while its sends are
            // in flight), sends for a while, then leaves (they move back).
            try await withSender(settings: settings) {
                let joined = delivered
                try await eventually("both instances send") { delivered >= joined + 2_500 }
            }
            do {
                _ = try await waitForResults(messages.count, within: .seconds(120))
            } catch {
                try await printMissing(messages)
                throw error
            }
        }
        let arrivals = arrivals(messages)
        let results = try await results()
        let types = Dictionary(grouping: results, by: { "\($0.type)/\($0.reason ?? "")" }).mapValues(\.count)
        #expect(
            arrivals.allSatisfy { $0 == 1 },
            "duplicates: \(arrivals.filter { $0 > 1 }.count), missing: \(arrivals.filter { $0 == 0 }.count); results: \(types); simulator: \(simulator.state.counters)"
        )
        #expect(Set(results.map(\.messageId)).count == messages.count)
        #expect(results.count == messages.count, "results: \(types)")
    }

    /// The real executable: SIGTERM mid-stream (exit status 0, nothing sent twice), then started
    /// and SIGKILLed twice right after reading its `push_sender_resend_window`, then a last
    /// instance finishes: nothing lost, re-sends within the windows read (plus the sends in flight
    /// between the read and the kill). Each instance's operations endpoint is on its own free port.
    /// Each phase waits for 1,000 sends: 4,000 messages leave about 1,000 for the last instance.
    func killAndRestartScenario(_ messages: [Message]) async throws {
        let opsPorts = try (0..<4).map { _ in try EphemeralPort.next() }
        try await publish(messages)
        let inFlight = 100
        let held = 200
        let settings = ["\(Self.settingsPrefix)_MAX_IN_FLIGHT": String(inFlight), "\(Self.settingsPrefix)_MAX_HELD": String(held)]

        // 1. SIGTERM: graceful, zero duplicates so far.
        var sender = try startExecutable(opsPort: opsPorts[0], settings: settings)
        try await eventually("sending starts") { delivered >= 1_000 }
        await sender.terminate()
        #expect(sender.terminationStatus == 0, "\(sender.logTail())")
        var arrivals = arrivals(messages)
        #expect(arrivals.allSatisfy { $0 <= 1 }, "SIGTERM: \(arrivals.filter { $0 > 1 }.count) duplicates")

        // 2. SIGKILL twice mid-stream, each right after reading the instance's re-send window.
        var windows: [Int] = []
        for (round, port) in opsPorts[1...2].enumerated() {
            sender = try startExecutable(opsPort: port, settings: settings)
            let before = delivered
            try await eventually("sending resumes (round \(round))") { delivered >= before + 1_000 }
            // The provider holds its answers from here until the kill, so the sender sends at most
            // its in-flight limit after the window is read, however long the read takes on a
            // loaded machine (answered at full speed, it kept sending and committing in between).
            _ = simulator.state.updateFaults { $0.latencyMs = 10_000 }
            try await Task.sleep(for: .milliseconds(300))
            windows.append(try await resendWindow(opsPort: port))
            await sender.kill()
            _ = simulator.state.updateFaults { $0.latencyMs = 0 }
        }

        // 3. A last instance finishes the stream.
        sender = try startExecutable(opsPort: opsPorts[3], settings: settings)
        defer { sender.killIfRunning() }
        try await eventually(within: .seconds(120), "every message sent") { self.arrivals(messages).allSatisfy { $0 >= 1 } }
        let results = try await waitForResults(messages.count)
        await sender.terminate()

        arrivals = self.arrivals(messages)
        let duplicates = arrivals.reduce(0) { $0 + max($1 - 1, 0) }
        #expect(arrivals.allSatisfy { $0 >= 1 }, "nothing lost")
        let bound = windows.reduce(0, +) + 2 * inFlight
        #expect(duplicates <= bound, "re-sent after the two SIGKILLs: \(duplicates); push_sender_resend_window before the kills: \(windows)")
        #expect(Set(results.map(\.messageId)).count == messages.count)
        print(
            "\(Self.executable) crash test: \(duplicates) messages re-sent after 2 SIGKILLs; push_sender_resend_window just before them: \(windows); held at most \(held)"
        )
    }

    /// On a timeout: which messages have no result, and their records on the retry topic.
    private func printMissing(_ messages: [Message]) async throws {
        let done = Set(try await results().map(\.messageId))
        let missing = messages.map { $0.messageId.uuidString.lowercased() }.filter { !done.contains($0) }
        for record in try await records(retryTopic.name) {
            let text = String(decoding: record.value, as: UTF8.self)
            if missing.contains(where: { text.contains($0) }) { print("retry record p\(record.partition)@\(record.offset): \(text)") }
        }
        print("missing: \(missing); simulator: \(simulator.state.counters)")
    }
}
