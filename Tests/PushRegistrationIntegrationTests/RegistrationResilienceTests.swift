import Foundation
import Logging
import PostgresNIO
import PushRegistration
import PushRuntime
import PushTestSupport
import Testing

@Suite("Registration under broker stalls and projection rebuilds", .serialized)
struct RegistrationResilienceTests {
    /// The pid of the local stack's broker (`scripts/stack` writes it).
    static func brokerPID() throws -> pid_t {
        let root = try #require(ProcessInfo.processInfo.environment["PUSH_STACK_ROOT"], "PUSH_STACK_ROOT is not set: run the suite with scripts/test")
        let text = try String(contentsOfFile: "\(root)/tansu.pid", encoding: .utf8)
        return try #require(pid_t(text.trimmingCharacters(in: .whitespacesAndNewlines)))
    }

    @Test("broker stopped (SIGSTOP): 503 within the store timeout; normal service after SIGCONT")
    func brokerStall() async throws {
        let pid = try Self.brokerPID()
        try await RegistrationHarness.run(settings: RegistrationSettings(storeTimeoutMilliseconds: 2_000)) { harness in
            let app = try await harness.defineApp(platform: .ios)
            let path = "/nms/mobile/1/registerIOS.jssp"
            #expect(
                try await harness.post(path, body: RegistrationEndpointTests.iosBody(key: app.integrationKey, token: RegistrationEndpointTests.hexToken()))
                    .status == 200)

            kill(pid, SIGSTOP)
            let clock = ContinuousClock()
            let started = clock.now
            let stalled: RegistrationHarness.Answer
            do {
                stalled = try await harness.post(
                    path, body: RegistrationEndpointTests.iosBody(key: app.integrationKey, token: RegistrationEndpointTests.hexToken()))
            } catch {
                kill(pid, SIGCONT)
                throw error
            }
            let waited = clock.now - started
            kill(pid, SIGCONT)
            #expect(stalled.status == 503, "\(stalled.body)")
            #expect(stalled.body.contains("could not be stored in time"))
            #expect(waited < .seconds(6), "answered within the store timeout (2 s) plus slack: \(waited)")

            // After SIGCONT the service recovers by itself.
            let token = RegistrationEndpointTests.hexToken()
            try await eventually(within: .seconds(30), "registrations succeed again") {
                try await harness.post(path, body: RegistrationEndpointTests.iosBody(key: app.integrationKey, token: token)).status == 200
            }
            try await eventually("the registration after the stall is projected") {
                try await harness.subscription(appId: app.appId, token: token) != nil
            }
        }
    }

    /// The rows of these apps, without `updated_at` (the time of projection).
    static func snapshot(_ harness: RegistrationHarness, apps: [UUID]) async throws -> [String] {
        let rows = try await harness.postgres.query(
            """
            SELECT (to_jsonb(s) - 'updated_at')::text FROM push.subscriptions s
            WHERE app_id = ANY(\(apps)) ORDER BY app_id, registration_token
            """,
            logger: harness.logger
        )
        var snapshot: [String] = []
        for try await row in rows.decode(String.self) { snapshot.append(row) }
        return snapshot
    }

    @Test("rebuilding push.subscriptions by replaying the topic gives the same rows as the live projection")
    func rebuildByReplay() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let (apps, live) = try await RegistrationHarness.run(suffix: suffix) { harness in
            let ios = try await harness.defineApp(platform: .ios)
            let android = try await harness.defineApp(platform: .android)
            let tokens = (0..<30).map { _ in RegistrationEndpointTests.hexToken() }
            for (index, token) in tokens.enumerated() {
                let body = RegistrationEndpointTests.iosBody(key: ios.integrationKey, token: token) + "&userKey=user-\(index)"
                #expect(try await harness.post("/nms/mobile/1/registerIOS.jssp", body: body).status == 200)
                #expect(
                    try await harness.post(
                        "/nms/mobile/1/registerAndroid.jssp", body: RegistrationEndpointTests.androidBody(key: android.integrationKey, token: "fcm-\(token)")
                    ).status == 200)
            }
            // Re-registrations and a quarantine, so the replay has to order events right.
            for token in tokens.prefix(5) {
                #expect(
                    try await harness.post(
                        "/nms/mobile/1/registerIOS.jssp", body: RegistrationEndpointTests.iosBody(key: ios.integrationKey, token: token) + "&userKey=again"
                    ).status == 200)
            }
            try await harness.disable(appId: ios.appId, token: tokens[7], reason: "BadDeviceToken", invalidSince: Date())
            try await eventually("live projection caught up") {
                let disabled = try await harness.subscription(appId: ios.appId, token: tokens[7])?["disabled"] == "true"
                let count = try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id IN (\(ios.appId), \(android.appId))")
                return disabled && count == 60
            }
            return ([ios.appId, android.appId], try await Self.snapshot(harness, apps: [ios.appId, android.appId]))
        }
        #expect(live.count == 60)

        // With the service stopped, throw the projection away: its rows and its positions.
        let configuration = try RuntimeConfiguration(service: "registration-tests", defaultOpsPort: 0)
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: Logger(label: "rebuild"))
        try await withThrowingTaskGroup(of: Void.self) { tasks in
            tasks.addTask { await postgres.run() }
            try await postgres.query("DELETE FROM push.subscriptions WHERE app_id = ANY(\(apps))")
            try await postgres.query("DELETE FROM push.consumer_offsets WHERE group_id = \("test.subscriptions-projection.\(suffix)")")
            tasks.cancelAll()
        }
        // Start the service again: the projection replays its topic from the beginning.
        try await RegistrationHarness.run(suffix: suffix) { harness in
            try await eventually("replay finished") {
                try await harness.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = ANY(\(apps))") == 60
            }
            try await Task.sleep(for: .seconds(1))
            let rebuilt = try await Self.snapshot(harness, apps: apps)
            #expect(rebuilt == live)
        }
    }
}
