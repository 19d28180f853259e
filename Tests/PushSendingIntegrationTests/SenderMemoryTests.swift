import Foundation
import ProviderSimulatorCore
import PushEvents
import PushTestSupport
import Testing

/// A sender's resident memory is bounded by its settings, not by the backlog on its topic
/// (docs/senders.md, "Memory"): the real fcm-sender executable, behind a slow provider, faces a
/// backlog many times larger than what its settings let it hold, then sends from it at full
/// speed; the kernel's own peak of its resident set (VmHWM, which no sampling interval can miss)
/// stays within its footprint before the backlog plus that much.
///
/// The peak is reached while the provider is slow: that is when the fetch queues are full
/// (unbounded, librdkafka fetches the whole backlog then). Sending the whole
/// backlog afterwards only repeats the drain's steady state; the test sends a quarter of it in
/// all, which covers the drain's own costs (answers, result events) at a quarter of the CPU.
@Suite("Sender memory", .serialized)
struct SenderMemoryTests {
    /// Records of the backlog: about 20 MB of record values, ten times the fetch queue and held
    /// records the settings below allow.
    static let backlog = 40_000
    static let fetchQueueKilobytes = 1_024
    static let maxHeld = 1_000
    /// Sent in all (the slow phase's included) before the peak is read; the rest goes at full
    /// speed after the slow phase.
    static let drained = 10_000

    /// What the settings let the process hold on top of its footprint before the backlog, in
    /// bytes: per lane a full fetch queue plus one fetch response past it (a response is capped
    /// at the queue's size or librdkafka's 1,000,000-byte floor, whichever is larger); per held
    /// record 4 KiB (its record, decoded message, request and answer: about 4 KiB measured by
    /// bench/sender-memory.sh); and 16 MiB for what does not grow with the backlog (the
    /// allocator's retained pages, the TLS and HTTP/2 buffers of the sends in flight, the
    /// producer's result events). Measured (debug build): 13 MiB over the footprint; with
    /// librdkafka's own fetch queue (65,536 KiB, 100,000 records) 52 MiB, so the test fails if
    /// the setting does not reach the consumers.
    static var allowance: Int {
        let queue = fetchQueueKilobytes * 1024
        return 2 * (queue + max(queue, 1_000_000)) + maxHeld * 4096 + 16 * 1024 * 1024
    }

    @Test("the fcm-sender faces a 40,000-record backlog, then sends from it, its VmHWM within its footprint plus its fetch queues and held records")
    func boundedBySettings() async throws {
        try await FCMSenderHarness.with { h in
            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(
                opsPort: opsPort,
                settings: [
                    "FCM_SENDER_FETCH_QUEUE_KB": String(Self.fetchQueueKilobytes), "FCM_SENDER_MAX_HELD": String(Self.maxHeld),
                    "FCM_SENDER_MAX_IN_FLIGHT": "50",
                ])
            defer { sender.killIfRunning() }
            // The footprint: joined, connected, its access token fetched, one message sent.
            let first = h.message(token: FCMSenderHarness.token())
            try await h.publish([first])
            try await eventually(within: .seconds(60), "the first message reaches FCM") { h.arrivals([first]) == [1] }
            let footprint = try Self.kilobytes("VmHWM", of: sender.processIdentifier) * 1024

            // A slow provider while the backlog is published: the sender reads only what it may
            // hold; the rest stays on the broker (or, unbounded, in librdkafka's queue).
            _ = h.simulator.state.updateFaults { $0.latencyMs = 500 }
            let backlog = (0..<Self.backlog).map { _ in h.message(token: FCMSenderHarness.token()) }
            try await h.publish(backlog)
            // Slow for a thousand sends (ten seconds at 50 in flight and 500 ms each): time for
            // the fetch queues to fill, and for an unbounded one to take the whole backlog.
            let published = h.delivered
            try await eventually(within: .seconds(120), "1,000 sends at the slow provider") { h.delivered >= published + 1_000 }
            _ = h.simulator.state.updateFaults { $0.latencyMs = 0 }
            try await eventually(within: .seconds(300), "\(Self.drained) sent") { h.delivered >= Self.drained + 1 }
            let peak = try Self.kilobytes("VmHWM", of: sender.processIdentifier) * 1024
            let mib = { (bytes: Int) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
            #expect(
                peak <= footprint + Self.allowance,
                "VmHWM \(mib(peak)) against a footprint of \(mib(footprint)) plus \(mib(Self.allowance)) the settings allow")
            await sender.terminate()
            #expect(sender.terminationStatus == 0, "\(sender.logTail())")
        }
    }

    /// A `/proc/PID/status` field in KiB (`VmHWM`, `VmRSS`).
    static func kilobytes(_ field: String, of pid: Int32) throws -> Int {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") }, "no \(field) in /proc/\(pid)/status")
        return try #require(Int(line.split(whereSeparator: \.isWhitespace).dropFirst().first ?? ""), "\(line)")
    }
}
