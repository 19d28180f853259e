import Foundation
import Logging
import PostgresNIO
import PushEvents
import PushSending
import PushStore
import PushTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The senders' statements against a PostgreSQL that stops answering: the server process behind
/// the sender's only connection is stopped (SIGSTOP), as a server that hangs or a connection cut
/// without a reset leaves it. postgres-nio has no statement timeout, so without a deadline each
/// of these reads would wait until the server came back, and with it the refresh of operators'
/// pauses and cancels, or the throttled sends.
@Suite("Sender statements against a PostgreSQL that stops answering", .serialized)
struct SenderStatementDeadlineTests {
    @Test(
        "with the server process of its connection stopped, the controls refresh and a throttle reservation each fail at their 1 s deadline (StatementDeadlineExceeded), and answer again once it runs"
    )
    func stoppedBackend() async throws {
        try await FCMSenderHarness.with { h in
            var settings = h.configuration.postgres
            settings.maximumConnections = 1
            let postgres = PostgresClient(configuration: settings.clientConfiguration, backgroundLogger: h.logger)
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                tasks.addTask { await postgres.run() }
                defer { tasks.cancelAll() }
                let controls = DeliveryControls(postgres: postgres, refresh: .seconds(60), statementDeadline: .seconds(1), logger: h.logger)
                let throttle = ThrottleSlots(postgres: postgres, provider: "fcm", statementDeadline: .seconds(1), logger: h.logger)
                let deliveryId = "deadline-\(h.suffix)"
                let rate = ThrottleRate(perSecond: 50)
                // Answered while the server runs (the throttle's clock readings taken too).
                try await controls.read()
                _ = try await throttle.slot(deliveryId: deliveryId, rate: rate)

                var backend: Int32?
                for try await pid in try await postgres.query("SELECT pg_backend_pid()", logger: h.logger).decode(Int32.self) { backend = pid }
                let pid = try #require(backend)
                #expect(kill(pid_t(pid), SIGSTOP) == 0, "could not stop the backend \(pid) (errno \(errno))")
                // Without the deadlines the reads would wait for good: the server is let go on after
                // 10 s whatever happens, so such a regression fails the expectations below instead.
                let watchdog = Task {
                    try? await Task.sleep(for: .seconds(10))
                    kill(pid_t(pid), SIGCONT)
                }
                let clock = ContinuousClock()
                do {
                    let started = clock.now
                    await #expect(throws: StatementDeadlineExceeded.self) { try await controls.read() }
                    let controlsWaited = clock.now - started
                    #expect(controlsWaited < .seconds(3), "the controls read gave up after \(controlsWaited)")

                    let reserving = clock.now
                    await #expect(throws: StatementDeadlineExceeded.self) { _ = try await throttle.reserveOnTimeline(deliveryId: deliveryId, rate: rate) }
                    let throttleWaited = clock.now - reserving
                    #expect(throttleWaited < .seconds(3), "the reservation gave up after \(throttleWaited)")
                    print("stopped backend: controls read gave up after \(controlsWaited), reservation after \(throttleWaited)")
                }
                watchdog.cancel()
                kill(pid_t(pid), SIGCONT)

                // The server runs again: the statements left behind finish and give their
                // connection back; the next reads are answered.
                try await eventually(within: .seconds(30), "the controls read answers again") {
                    (try? await controls.read()) != nil
                }
                let (batch, _) = try await throttle.reserveOnTimeline(deliveryId: deliveryId, rate: rate)
                #expect(batch.remaining == rate.batchSize)
            }
        }
    }
}
