import Logging
import PostgresNIO
import PushRuntime
import ServiceLifecycle
import Synchronization

/// The deliveries an operator cancelled or paused, as `push.delivery_controls` says (the
/// deliveries projection of `push.delivery-events`), read every `refresh`: only the rows whose
/// `version` grew since the last read, so a refresh costs one indexed query whatever the number
/// of deliveries. The sender asks it about every message before sending (`MessageSender.take`).
///
/// A sender reads no message before the first read succeeded (`loaded()`): after a restart, a
/// cancelled delivery's messages are not sent while the table is being read.
package final class DeliveryControls: Service, Sendable {
    package enum State: String, Sendable {
        case active, paused, cancelled
    }

    let postgres: PostgresClient
    let refresh: Duration
    let logger: Logger
    /// Deliveries not active, and the highest version read.
    private let known = Mutex<(states: [String: State], version: Int64, loaded: Bool)>(([:], 0, false))
    /// One per task waiting in `loaded()` (each lane's sender waits; a `Wakeup` has one waiter).
    private let firstReadWaiters = Mutex<[Wakeup]>([])

    package init(postgres: PostgresClient, refresh: Duration, logger: Logger) {
        self.postgres = postgres
        self.refresh = refresh
        self.logger = logger
    }

    /// The delivery's state as last read.
    package func state(of deliveryId: String) -> State {
        known.withLock { $0.states.isEmpty ? .active : ($0.states[deliveryId] ?? .active) }
    }

    /// Returns once the table was read once (or the sender stops). Several tasks may wait.
    package func loaded() async {
        let firstRead = Wakeup()
        firstReadWaiters.withLock { $0.append(firstRead) }
        defer { firstReadWaiters.withLock { $0.removeAll { $0 === firstRead } } }
        while !known.withLock({ $0.loaded }) {
            if Task.isCancelled || Task.isShuttingDownGracefully { return }
            await firstRead.wait(atMost: .milliseconds(100), orGracefulShutdown: true)
        }
    }

    /// Reads every `refresh` until the service group stops it. A read waiting for PostgreSQL
    /// (unreachable) is cancelled by the stop rather than holding the shutdown up.
    package func run() async throws {
        try? await cancelWhenGracefulShutdown { [self] in
            var failures = 0
            while !Task.isCancelled {
                do {
                    try await read()
                    failures = 0
                } catch  where !Task.isCancelled {
                    failures += 1
                    if failures == 1 || failures % 20 == 0 {
                        logger.warning("Reading push.delivery_controls failed; retried", metadata: ["error": "\(String(reflecting: error))"])
                    }
                }
                try await Task.sleep(for: refresh)
            }
        }
    }

    /// Reads what changed since the last read.
    func read() async throws {
        let since = known.withLock { $0.version }
        let rows = try await postgres.query(
            "SELECT delivery_id, state, version FROM push.delivery_controls WHERE version > \(since) ORDER BY version", logger: logger)
        var changes: [(String, State, Int64)] = []
        for try await (deliveryId, state, version) in rows.decode((String, String, Int64).self) {
            changes.append((deliveryId, State(rawValue: state) ?? .active, version))
        }
        let first = known.withLock { known in
            for (deliveryId, state, version) in changes {
                if state == .active { known.states[deliveryId] = nil } else { known.states[deliveryId] = state }
                known.version = max(known.version, version)
            }
            defer { known.loaded = true }
            return !known.loaded
        }
        for (deliveryId, state, _) in changes where !first {
            logger.notice("Delivery control", metadata: ["delivery.id": "\(deliveryId)", "state": "\(state.rawValue)"])
        }
        if first { for waiter in firstReadWaiters.withLock({ $0 }) { waiter.signal() } }
    }
}
