import Logging
import PostgresNIO

/// The rows of `push.delivery_throttle` no reservation needs any more (docs/database.md): a
/// row whose `next_slot` has passed is the same as no row, since the senders' reservation starts
/// from `greatest(next_slot, clock_timestamp())`. The delivery planner's
/// `LogPartitionMaintenance` deletes those more than `margin` in the past at each run.
package enum ThrottleTimelines {
    /// How far in the past a row's `next_slot` must be before it is deleted: a minute, well past
    /// any clock difference between a sender and the database.
    package static let margin: Duration = .seconds(60)

    /// Deletes the timelines whose `next_slot` is more than `margin` before the database's clock;
    /// returns how many. A reservation racing with it waits for the row's lock and either finds
    /// the row gone (it inserts one from now: the same slots) or moved forward, which the
    /// statement's condition, evaluated again on the locked row, then keeps.
    @discardableResult
    package static func deletePast(margin: Duration = Self.margin, on connection: PostgresConnection, logger: Logger) async throws -> Int {
        let seconds = Double(margin.components.seconds) + Double(margin.components.attoseconds) / 1e18
        let rows = try await connection.query(
            """
            WITH deleted AS (
                DELETE FROM push.delivery_throttle WHERE next_slot < clock_timestamp() - make_interval(secs => \(seconds)) RETURNING 1
            )
            SELECT count(*)::bigint FROM deleted
            """, logger: logger)
        var count = 0
        for try await value in rows.decode(Int64.self) { count = Int(value) }
        return count
    }
}
