import Foundation
import Kafka
import PushEvents
import PushSending
import Testing

/// Several sender instances, rebalances, SIGTERM and SIGKILL of the real `apns-sender` executable;
/// the simulator's log proves what reached "APNs".
@Suite("APNs sender: instances, rebalances and crashes", .serialized)
struct APNSSenderCrashTests {
    @Test("a second instance joins mid-stream and later leaves: every message sent exactly once")
    func rebalance() async throws {
        try await APNSSenderHarness.with { h in
            // About 500 sends per second per instance, so that the stream outlasts both rebalances.
            _ = h.simulator.state.updateFaults { $0.latencyMs = 20 }
            let messages = (0..<8_000).map { _ in h.message(token: APNSSenderHarness.token()) }
            try await h.publish(messages)
            let settings = ["APNS_SENDER_MAX_IN_FLIGHT": "10"]
            try await h.withSender(settings: settings) {
                try await h.eventually("the first instance sends") { h.simulator.state.counters.accepted >= 500 }
                // A second member joins (partitions move away from the first while its sends are
                // in flight), sends for a while, then leaves (they move back).
                try await h.withSender(settings: settings) {
                    let joined = h.simulator.state.counters.accepted
                    try await h.eventually("both instances send") { h.simulator.state.counters.accepted >= joined + 2_500 }
                }
                do {
                    _ = try await h.waitForResults(8_000, within: .seconds(120))
                } catch {
                    let done = Set(try await h.results().map(\.messageId))
                    let missing = messages.filter { !done.contains($0.messageId.uuidString.lowercased()) }.map { $0.messageId.uuidString.lowercased() }
                    for record in try await h.records(h.topics.apnsRetries.name) {
                        let text = String(decoding: record.value, as: UTF8.self)
                        if missing.contains(where: { text.contains($0) }) { print("retry record p\(record.partition)@\(record.offset): \(text)") }
                    }
                    print("missing: \(missing); simulator: \(h.simulator.state.counters)")
                    throw error
                }
            }
            let arrivals = h.arrivals(messages)
            let results = try await h.results()
            let types = Dictionary(grouping: results, by: { "\($0.type)/\($0.reason ?? "")" }).mapValues(\.count)
            #expect(arrivals.allSatisfy { $0 == 1 }, "duplicates: \(arrivals.filter { $0 > 1 }.count), missing: \(arrivals.filter { $0 == 0 }.count); results: \(types); simulator: \(h.simulator.state.counters)")
            #expect(Set(results.map(\.messageId)).count == 8_000)
            #expect(results.count == 8_000)
        }
    }

    @Test("SIGTERM mid-stream sends nothing twice; SIGKILL re-sends at most what was held, loses nothing")
    func killAndRestart() async throws {
        try await APNSSenderHarness.with { h in
            _ = h.simulator.state.updateFaults { $0.latencyMs = 5 }
            let messages = (0..<6_000).map { _ in h.message(token: APNSSenderHarness.token()) }
            try await h.publish(messages)
            let held = 200
            let settings = ["APNS_SENDER_MAX_IN_FLIGHT": "100", "APNS_SENDER_MAX_HELD": String(held)]

            // 1. SIGTERM: graceful, zero duplicates so far.
            var sender = try h.startExecutable(opsPort: 19_411, settings: settings)
            try await h.eventually("sending starts") { h.simulator.state.counters.accepted >= 1_000 }
            kill(sender.processIdentifier, SIGTERM)
            sender.waitUntilExit()
            #expect(sender.terminationStatus == 0)
            var arrivals = h.arrivals(messages)
            #expect(arrivals.allSatisfy { $0 <= 1 }, "SIGTERM: \(arrivals.filter { $0 > 1 }.count) duplicates")

            // 2. SIGKILL twice mid-stream, each right after reading the instance's re-send window.
            var windows: [Int] = []
            for (round, port) in [19_412, 19_413].enumerated() {
                sender = try h.startExecutable(opsPort: port, settings: settings)
                let before = h.simulator.state.counters.accepted
                try await h.eventually("sending resumes (round \(round))") { h.simulator.state.counters.accepted >= before + 1_000 }
                windows.append(try await h.resendWindow(opsPort: port))
                kill(sender.processIdentifier, SIGKILL)
                sender.waitUntilExit()
            }

            // 3. A last instance finishes the stream.
            sender = try h.startExecutable(opsPort: 19_414, settings: settings)
            defer { if sender.isRunning { kill(sender.processIdentifier, SIGKILL) } }
            try await h.eventually(within: .seconds(120), "every message sent") { h.arrivals(messages).allSatisfy { $0 >= 1 } }
            let results = try await h.waitForResults(6_000)
            kill(sender.processIdentifier, SIGTERM)
            sender.waitUntilExit()

            arrivals = h.arrivals(messages)
            let duplicates = arrivals.reduce(0) { $0 + max($1 - 1, 0) }
            #expect(arrivals.allSatisfy { $0 >= 1 }, "nothing lost")
            // What was read again is bounded by the window the metric showed just before each kill,
            // plus the sends in flight that finished between the metric read and the kill.
            let bound = windows.reduce(0, +) + 2 * 100
            #expect(duplicates <= bound, "re-sent after the two SIGKILLs: \(duplicates); push_sender_resend_window before the kills: \(windows)")
            #expect(Set(results.map(\.messageId)).count == 6_000)
            print("sender crash test: \(duplicates) messages re-sent after 2 SIGKILLs; push_sender_resend_window just before them: \(windows); held at most \(held)")
        }
    }
}
