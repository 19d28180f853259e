import Foundation

/// The message ids a sender instance is working on, and those whose final outcome it decided
/// lately: a second record of a message it already holds or finished is not sent again.
///
/// Such twins come from crashes. A record is finished (its offset stored) only once the events
/// of its outcome are stored, so a SIGKILL between the two makes the next owner read it again
/// and decide again: a message set aside on the retry topic (a retry, a paused delivery) is set
/// aside twice, and both copies would later be sent. Twins carry the same message id and the same
/// key, so they reach the same partition and, after a rebalance, the same instance; they are
/// close in the partition (written within one commit interval of each other, and re-queued at
/// the same rhythm), which a bounded memory of recent outcomes covers.
///
/// An id leaves `active` when the outcome of its record is decided, before the outcome's records
/// are published: the retry record a decision writes is never mistaken for a twin of the record
/// it replaces.
struct MessageLedger {
    /// How many final outcomes are remembered (about 40 bytes each).
    static let rememberedFinals = 65_536

    private var active: Set<UUID> = []
    private var finals: Set<UUID> = []
    /// `finals` in the order they were decided, as a ring: the oldest is forgotten first.
    private var order: [UUID] = []
    private var next = 0
    private let capacity: Int

    init(capacity: Int = MessageLedger.rememberedFinals) {
        self.capacity = max(1, capacity)
    }

    /// Whether a record of this message may be begun: false for a twin (the message is held,
    /// or its final outcome was decided here lately). Admitted ids become active.
    mutating func admit(_ id: UUID) -> Bool {
        guard !finals.contains(id) else { return false }
        return active.insert(id).inserted
    }

    /// The outcome of the message's record is decided: it is no longer held; a final outcome
    /// (sent, failed, expired, cancelled) is remembered.
    mutating func decided(_ id: UUID, final: Bool) {
        active.remove(id)
        guard final, finals.insert(id).inserted else { return }
        if order.count < capacity {
            order.append(id)
        } else {
            finals.remove(order[next])
            order[next] = id
            next = (next + 1) % capacity
        }
    }

    var activeCount: Int { active.count }
    var finalCount: Int { finals.count }
}
