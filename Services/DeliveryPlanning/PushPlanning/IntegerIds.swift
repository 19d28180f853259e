import Logging
import PostgresNIO

/// Delivery ids, the payload's `_dId`: a positive 32-bit integer per accepted request, written as
/// decimal text (apps written from the Campaign samples call `Integer.valueOf` on it).
///
/// The intake takes the next value of the sequence `push.delivery_ids` for a request it has not
/// accepted before (or the value the admin API reserved for it, `push.delivery_id_reservations`), and the id is kept with the plan (`push.delivery_plans`, unique per
/// requestId): a request read again after a restart or a replay of the request topic is found
/// there and keeps its id. Ids increase but are not consecutive (a rejected request or a rolled
/// back batch uses one).
enum DeliveryIds {
    /// The id of the delivery this request already became, if any.
    static func existing(requestId: String, on connection: PostgresConnection, logger: Logger) async throws -> String? {
        let rows = try await connection.query("SELECT delivery_id FROM push.delivery_plans WHERE request_id = \(requestId)", logger: logger)
        for try await id in rows.decode(String.self) { return id }
        return nil
    }

    /// The id the admin API reserved for this request when it was submitted over HTTP
    /// (`push.delivery_id_reservations`), or else a new one from `push.delivery_ids`.
    static func next(requestId: String, on connection: PostgresConnection, logger: Logger) async throws -> String {
        let rows = try await connection.query(
            """
            SELECT coalesce((SELECT delivery_id FROM push.delivery_id_reservations WHERE request_id = \(requestId)), nextval('push.delivery_ids')::text)
            """,
            logger: logger)
        for try await id in rows.decode(String.self) { return id }
        throw IntegerIdError(description: "no delivery id for \(requestId)")
    }
}

/// An allocator did not answer as the schema promises.
struct IntegerIdError: Error, CustomStringConvertible {
    var description: String
}

/// A run of consecutive broadLog ids reserved for one fan-out chunk: `first ..< first + count`.
struct BroadLogIdBlock: Codable, Hashable, Sendable {
    var first: Int32
    var count: Int32

    var ids: ClosedRange<Int32>? { count > 0 ? first...(first + (count - 1)) : nil }
}

/// BroadLog ids, the payload's `_mId`: a positive 32-bit integer per message (Android apps use it
/// as the notification id, so two messages on one device must not share it).
///
/// One row, `push.broad_log_id_allocator`, holds the next id. A planner reserves a block for each
/// chunk in one statement (no round trip per message) and records the block with the chunk's
/// mark, so that a planner resuming the chunk after a crash hands out the same ids. Ids run from
/// 1 to 2^31 - 1 and then start again at 1: unique across deliveries until 2^31 messages have
/// been planned.
enum BroadLogIds {
    /// One past the largest id.
    static let end: Int64 = Int64(Int32.max) + 1

    /// Reserves `count` consecutive ids (1 ... 100,000, a chunk's messages). A block that would
    /// pass 2^31 - 1 starts again at 1 instead.
    static func reserve(_ count: Int, on connection: PostgresConnection, logger: Logger) async throws -> BroadLogIdBlock {
        precondition(count > 0 && count < 1 << 24, "a block is one chunk's messages")
        let size = Int64(count)
        let end = Self.end
        let rows = try await connection.query(
            """
            UPDATE push.broad_log_id_allocator
            SET next_id = CASE WHEN next_id + \(size) > \(end) THEN 1 + \(size) ELSE next_id + \(size) END, updated_at = now()
            RETURNING next_id - \(size)
            """,
            logger: logger
        )
        for try await first in rows.decode(Int64.self) {
            return BroadLogIdBlock(first: Int32(first), count: Int32(count))
        }
        throw IntegerIdError(description: "push.broad_log_id_allocator has no row (schema migration 8 inserts it)")
    }
}

/// Hands out a chunk's broadLog ids in order from its blocks, skipping the ids that messages the
/// broker already stored carry (a resumed chunk), so that no two messages of the chunk share one.
struct BroadLogIdAssigner {
    /// The blocks ids are taken from, in order: what a chunk's mark records.
    private(set) var blocks: [BroadLogIdBlock]
    private let taken: Set<Int32>
    private var block = 0
    private var offset: Int32 = 0

    init(blocks: [BroadLogIdBlock], taken: Set<Int32> = []) {
        self.blocks = blocks
        self.taken = taken
    }

    /// How many ids are left to hand out.
    var remaining: Int {
        blocks[block...].enumerated().reduce(0) { sum, item in
            let (index, candidate) = item
            guard let ids = candidate.ids else { return sum }
            let start = index == 0 ? ids.lowerBound + offset : ids.lowerBound
            guard start <= ids.upperBound else { return sum }
            let range = start...ids.upperBound
            return sum + range.count - taken.count { range.contains($0) }
        }
    }

    /// Appends a block to take ids from once the others are used up.
    mutating func add(_ block: BroadLogIdBlock) {
        blocks.append(block)
    }

    /// The next free id; nil when the blocks are used up.
    mutating func next() -> Int32? {
        while block < blocks.count {
            let current = blocks[block]
            while offset < current.count {
                let id = current.first + offset
                offset += 1
                if !taken.contains(id) { return id }
            }
            block += 1
            offset = 0
        }
        return nil
    }
}
