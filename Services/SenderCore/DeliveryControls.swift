import Logging
import PostgresNIO
import PushRuntime
import PushStore
import ServiceLifecycle
import Synchronization

/// The deliveries an operator cancelled or paused, as `push.delivery_controls` says (the
/// deliveries projection of `push.delivery-events`), read every `refresh`: only the rows written
/// by a transaction that may have committed since the last read, so a refresh costs one indexed
/// query whatever the number of deliveries. The sender asks it about every message before
/// sending (`MessageSender.take`).
///
/// The cursor is not the highest `version` seen: versions are taken before their transactions
/// commit, and two planner instances project in parallel, so a change with a lower version can
/// commit after a higher one was read. It is the oldest transaction still running when the last
/// read's snapshot was taken (`pg_snapshot_xmin`): every transaction that commits later has an
/// id at or above it, and the trigger of migration 25 stamps each row with its writer's id. A
/// row may be read twice (its transaction committed before the last read, but after an older
/// one began); it holds the delivery's current state, so reading it again changes nothing.
///
/// A sender reads no message before the first read succeeded (`loaded()`): after a restart, a
/// cancelled delivery's messages are not sent while the table is being read.
package final class DeliveryControls: Service, Sendable {
    package enum State: String, Sendable {
        case active, paused, cancelled
    }

    let postgres: PostgresClient
    let refresh: Duration
    /// How long one read may wait for PostgreSQL. A statement can go unanswered for good (a
    /// server that stopped, a connection cut without a reset, a connection lost as it was leased:
    /// `withStatementDeadline`); without a bound the refreshes would stop there, and with them
    /// every pause and cancel an operator makes afterwards.
    let statementDeadline: Duration
    let logger: Logger
    /// Deliveries not active, and where the next read starts: the `xid8` (as text) of the oldest
    /// transaction running at the last read.
    private let known = Mutex<(states: [String: State], horizon: String, loaded: Bool)>(([:], "0", false))
    /// One per task waiting in `loaded()` (each lane's sender waits; a `Wakeup` has one waiter).
    private let firstReadWaiters = Mutex<[Wakeup]>([])

    package init(postgres: PostgresClient, refresh: Duration, statementDeadline: Duration = .seconds(10), logger: Logger) {
        self.postgres = postgres
        self.refresh = refresh
        self.statementDeadline = statementDeadline
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
    /// (unreachable) is given up at its deadline and tried again, and stops being waited for at
    /// once when the service stops, even a statement that would never have answered.
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

    /// Reads what may have changed since the last read (one statement: the rows and the horizon
    /// come from the same snapshot).
    package func read() async throws {
        let since = known.withLock { $0.horizon }
        let (horizon, changes) = try await withStatementDeadline(statementDeadline) { [postgres, logger] in
            let rows = try await postgres.query(
                """
                SELECT h.horizon::text, c.delivery_id, c.state
                FROM (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS horizon) h
                LEFT JOIN push.delivery_controls c ON c.writer_xid >= \(since)::xid8
                ORDER BY c.version
                """,
                logger: logger)
            var horizon = since
            var changes: [(String, State)] = []
            for try await (rowHorizon, deliveryId, state) in rows.decode((String, String?, String?).self) {
                horizon = rowHorizon
                if let deliveryId, let state { changes.append((deliveryId, State(rawValue: state) ?? .active)) }
            }
            return (horizon, changes)
        }
        // Only what differs from the state known: a row read again is not a change to log.
        let (first, changed) = known.withLock { known in
            var changed: [(String, State)] = []
            for (deliveryId, state) in changes where state != (known.states[deliveryId] ?? .active) {
                if state == .active { known.states[deliveryId] = nil } else { known.states[deliveryId] = state }
                changed.append((deliveryId, state))
            }
            known.horizon = horizon
            defer { known.loaded = true }
            return (!known.loaded, changed)
        }
        for (deliveryId, state) in changed where !first {
            logger.notice("Delivery control", metadata: ["delivery.id": "\(deliveryId)", "state": "\(state.rawValue)"])
        }
        if first { for waiter in firstReadWaiters.withLock({ $0 }) { waiter.signal() } }
    }
}
