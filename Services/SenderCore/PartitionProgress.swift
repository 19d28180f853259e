import Kafka

/// Which records of one partition are finished, so the sender stores an offset only when every
/// record before it is finished (records finish out of order: sends run concurrently and
/// retries wait). The stored offset is where a new owner, or this instance after a crash, resumes.
struct PartitionProgress: Sendable {
    /// Offsets begun and not yet below the stored offset, in read order (increasing).
    private var pending: [Int64] = []
    private var head = 0
    private var finished: Set<Int64> = []

    /// Records begun and not finished.
    private(set) var held = 0

    mutating func begin(_ offset: Int64) {
        pending.append(offset)
        held += 1
    }

    /// Marks a record finished; returns the next offset to store when the contiguous prefix grew.
    mutating func finish(_ offset: Int64) -> Int64? {
        held -= 1
        guard head < pending.count else { return nil }
        if pending[head] != offset {
            finished.insert(offset)
            return nil
        }
        var next = offset + 1
        head += 1
        while head < pending.count, finished.remove(pending[head]) != nil {
            next = pending[head] + 1
            head += 1
        }
        if head > 1024, head * 2 > pending.count {
            pending.removeFirst(head)
            head = 0
        }
        return next
    }

    /// The record will not be finished by this instance (its events could not be stored): it
    /// stops counting as held, and the stored offset never passes it.
    mutating func abandon() {
        held -= 1
    }

    /// Records finished but waiting behind an unfinished one: re-sent if this instance dies now.
    var finishedBehindUnfinished: Int { finished.count }
}
