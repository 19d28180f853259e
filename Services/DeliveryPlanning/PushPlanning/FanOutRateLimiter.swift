/// Keeps a delivery's fan-out at or under `perSecond` records in every window of one second
/// (a sliding log of what was released during the last second), spread evenly: a slice of n
/// records is released no sooner than n / perSecond seconds after the previous one.
struct FanOutRateLimiter {
    let perSecond: Int
    private var released: [(at: ContinuousClock.Instant, count: Int)] = []
    private var inWindow = 0

    init(perSecond: Int) {
        self.perSecond = max(1, perSecond)
    }

    /// Slices of at most a tenth of the rate keep the flow smooth.
    var sliceSize: Int { max(1, perSecond / 10) }

    private func spacing(_ count: Int) -> Duration {
        .nanoseconds(Int64(count) * 1_000_000_000 / Int64(perSecond))
    }

    /// Waits until `count` (at most `perSecond`) more records fit in the last second.
    mutating func acquire(_ count: Int) async throws {
        let clock = ContinuousClock()
        while true {
            let now = clock.now
            while let first = released.first, first.at <= now - .seconds(1) {
                inWindow -= first.count
                released.removeFirst()
            }
            if let last = released.last, now < last.at + spacing(last.count) {
                try await Task.sleep(until: last.at + spacing(last.count), clock: clock)
                continue
            }
            if inWindow + count <= perSecond || released.isEmpty {
                released.append((now, count))
                inWindow += count
                return
            }
            try await Task.sleep(until: released[0].at + .seconds(1), clock: clock)
        }
    }
}
