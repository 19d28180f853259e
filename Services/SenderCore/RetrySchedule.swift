import Foundation

/// Records waiting for their `notBefore`, earliest first (a binary min-heap).
struct RetrySchedule<Item>: Sendable where Item: Sendable {
    private var heap: [(due: Date, item: Item)] = []

    var count: Int { heap.count }

    /// When the earliest item is due; nil when none waits.
    var nextDue: Date? { heap.first?.due }

    mutating func insert(_ item: Item, due: Date) {
        heap.append((due, item))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard heap[child].due < heap[parent].due else { break }
            heap.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the items due at `now`, earliest first.
    mutating func popDue(_ now: Date) -> [Item] {
        var due: [Item] = []
        while let first = heap.first, first.due <= now {
            due.append(removeFirst())
        }
        return due
    }

    /// Removes and returns every item matching `predicate` (a partition handed back), in no order.
    mutating func removeAll(where predicate: (Item) -> Bool) -> [Item] {
        let removed = heap.filter { predicate($0.item) }.map(\.item)
        guard !removed.isEmpty else { return [] }
        let kept = heap.filter { !predicate($0.item) }
        heap = []
        for entry in kept { insert(entry.item, due: entry.due) }
        return removed
    }

    private mutating func removeFirst() -> Item {
        let first = heap[0].item
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].due < heap[smallest].due { smallest = left }
                if right < heap.count, heap[right].due < heap[smallest].due { smallest = right }
                if smallest == parent { break }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
        return first
    }
}
