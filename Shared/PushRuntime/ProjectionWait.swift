import Logging
import PostgresNIO

/// How a call that stored an event waits until a projection shows it ("read your own writes"
/// for the admin APIs and the console): the projection notifies a PostgreSQL channel in every
/// transaction that applies events (`notify`, delivered on commit), and the waiter listens, then
/// checks, and checks again at each notification, until the check holds or the time is up. No
/// polling interval: the answer comes as soon as the projection commits.
///
/// Listening first, then checking: a commit between the two is seen either way (by the check,
/// or as a notification).
package struct ProjectionWait: Sendable {
    /// The PostgreSQL notification channel.
    package let channel: String

    package init(channel: String) {
        self.channel = channel
    }

    /// `push.services`, `push.apps`, `push.app_credentials`, `push.templates` (the catalog
    /// projection).
    package static let catalog = ProjectionWait(channel: "push_catalog_changed")
    /// `push.subscriptions` (the subscription projection).
    package static let subscriptions = ProjectionWait(channel: "push_subscriptions_changed")
    /// `push.deliveries` and `push.delivery_controls` (the deliveries projection).
    package static let deliveries = ProjectionWait(channel: "push_deliveries_changed")

    /// Called by the projection inside its transaction when it applies events: the waiters are
    /// told when it commits (nothing if it rolls back).
    package func notify(on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("SELECT pg_notify(\(channel), '')", logger: logger)
    }

    /// Waits until `check` holds (true), or `timeout` passes (false). `check` runs on the
    /// listening connection: once at once, then after each notification.
    package func until(
        timeout: Duration, postgres: PostgresClient, logger: Logger,
        _ check: @escaping @Sendable (PostgresConnection) async throws -> Bool
    ) async throws -> Bool {
        let channel = channel
        return try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await postgres.withConnection { connection in
                    try await connection.listen(on: channel) { changes in
                        if try await check(connection) { return true }
                        for try await _ in changes {
                            if try await check(connection) { return true }
                        }
                        return false
                    }
                }
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            defer { group.cancelAll() }
            return try await group.next() ?? false
        }
    }
}
