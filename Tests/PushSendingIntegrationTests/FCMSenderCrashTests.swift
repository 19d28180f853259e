import Testing

/// Several fcm-sender instances, rebalances, SIGTERM and SIGKILL of the real `fcm-sender`
/// executable (SenderCrashScenarios.swift); the simulator's log proves what reached "FCM".
/// Progress is counted from that log: the simulator's `accepted` counter also counts each
/// instance's OAuth token request.
@Suite("FCM sender: instances, rebalances and crashes", .serialized)
struct FCMSenderCrashTests {
    @Test("a second instance joins mid-stream and later leaves: every message sent exactly once")
    func rebalance() async throws {
        try await FCMSenderHarness.with { h in
            // About 500 sends per second per instance, so that the stream outlasts both rebalances.
            _ = h.simulator.state.updateFaults { $0.latencyMs = 20 }
            try await h.rebalanceScenario((0..<5_000).map { _ in h.message(token: FCMSenderHarness.token()) })
        }
    }

    @Test("SIGTERM mid-stream sends nothing twice; SIGKILL re-sends at most what was held, loses nothing")
    func killAndRestart() async throws {
        try await FCMSenderHarness.with { h in
            _ = h.simulator.state.updateFaults { $0.latencyMs = 5 }
            try await h.killAndRestartScenario((0..<4_000).map { _ in h.message(token: FCMSenderHarness.token()) })
        }
    }
}
