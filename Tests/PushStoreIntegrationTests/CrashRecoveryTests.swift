import Foundation
import PostgresNIO
import PushTestSupport
import Testing

@Suite("Projection runner survives SIGKILL", .serialized)
struct CrashRecoveryTests {
    /// Starts `pushctl journal` as its own process, as an operator would.
    private static func startJournal(topic: String, group: String) throws -> BuiltExecutable {
        var environment = TestStack.environment
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        environment["LOG_LEVEL"] = "error"
        return try BuiltExecutable("pushctl", arguments: ["journal", "--topic", topic, "--group", group], environment: environment)
    }

    @Test("kill -9 in the middle of a batch stream, restart: every event is projected exactly once")
    func killAndRestart() async throws {
        let topic = StoreTestSupport.uniqueName("crash")
        let group = StoreTestSupport.uniqueName("crash-group")
        let run = UUID().uuidString
        let total = 30_000
        try await StoreTestSupport.createTopic(topic, partitions: 4)
        _ = try await StoreTestSupport.produceEvents(topic: topic, run: run, count: total)

        try await StoreTestSupport.withPostgres { postgres in
            var killedAt: [Int] = []
            // Two crashes, each while the projection is part-way through the topic.
            for _ in 0..<2 {
                let worker = try Self.startJournal(topic: topic, group: group)
                let before = try await StoreTestSupport.journalCounts(postgres, run: run).rows
                try await eventually(within: .seconds(60), "the worker makes progress") {
                    try await StoreTestSupport.journalCounts(postgres, run: run).rows > before + 2_000
                }
                await worker.kill()
                #expect(worker.terminationReason == .uncaughtSignal)
                killedAt.append(try await StoreTestSupport.journalCounts(postgres, run: run).rows)
            }
            #expect(killedAt.allSatisfy { $0 < total }, "each kill happened mid-stream: \(killedAt)")

            let worker = try Self.startJournal(topic: topic, group: group)
            try await eventually(within: .seconds(90), "the restarted worker catches up") {
                try await StoreTestSupport.journalCounts(postgres, run: run).rows >= total
            }
            try await Task.sleep(for: .seconds(2))
            await worker.terminate()  // SIGTERM: graceful shutdown
            #expect(worker.terminationStatus == 0, "SIGTERM ends the worker cleanly\n\(worker.logTail())")

            let counts = try await StoreTestSupport.journalCounts(postgres, run: run)
            #expect(counts.rows == total, "no event lost, none projected twice (killed at \(killedAt))")
            #expect(counts.distinct == total)
        }
    }
}
