import Synchronization

/// The mutable state every connection of one simulator shares: fault plan, stream limit,
/// counters and the bounded log of accepted notifications. One lock; every critical section
/// is a few field updates, so contention stays low at tens of thousands of requests a second.
package final class SimulatorState: Sendable {
    private struct Storage {
        var faults = FaultPlan()
        /// What `reset` restores (the command line's settings).
        var baselineFaults = FaultPlan()
        var maxConcurrentStreams: Int
        var counters = SimulatorCounters()
        var log: [LoggedNotification] = []
        /// Index of the oldest entry once `log` is full (ring buffer).
        var logStart = 0
        var nextSequence = 1
    }

    private let storage: Mutex<Storage>
    /// How many accepted notifications the log keeps before dropping the oldest.
    package let logCapacity: Int
    private let defaultMaxConcurrentStreams: Int

    package init(maxConcurrentStreams: Int, logCapacity: Int) {
        self.storage = Mutex(Storage(maxConcurrentStreams: maxConcurrentStreams))
        self.logCapacity = max(1, logCapacity)
        self.defaultMaxConcurrentStreams = maxConcurrentStreams
    }

    package var faults: FaultPlan {
        self.storage.withLock { $0.faults }
    }

    /// Sets the fault plan and makes it the one `reset` restores (command-line settings).
    package func setBaselineFaults(_ faults: FaultPlan) {
        self.storage.withLock {
            $0.faults = faults
            $0.baselineFaults = faults
        }
    }

    package func updateFaults(_ update: (inout FaultPlan) -> Void) -> FaultPlan {
        self.storage.withLock {
            update(&$0.faults)
            return $0.faults
        }
    }

    /// MAX_CONCURRENT_STREAMS for connections that have proved themselves (all connections when
    /// the provider has no first-request rule).
    package var maxConcurrentStreams: Int {
        get { self.storage.withLock { $0.maxConcurrentStreams } }
        set { self.storage.withLock { $0.maxConcurrentStreams = newValue } }
    }

    /// Takes one request of a 429 burst, if one is armed.
    package func takeBurst429() -> Bool {
        self.storage.withLock {
            guard $0.faults.burst429 > 0 else { return false }
            $0.faults.burst429 -= 1
            return true
        }
    }

    /// Takes one send of `token`'s device-quota answers, if any are armed.
    package func takeDeviceQuota(token: String) -> Bool {
        self.storage.withLock {
            guard let left = $0.faults.deviceQuota[token], left > 0 else { return false }
            $0.faults.deviceQuota[token] = left > 1 ? left - 1 : nil
            return true
        }
    }

    package func recordAnswer(status: Int, reason: String?) {
        self.storage.withLock {
            if (200..<300).contains(status) {
                $0.counters.accepted += 1
            } else {
                $0.counters.rejected += 1
            }
            $0.counters.byStatus[String(status), default: 0] += 1
            if let reason {
                $0.counters.byReason[reason, default: 0] += 1
            }
        }
    }

    package func recordConnection() {
        self.storage.withLock { $0.counters.connections += 1 }
    }

    package func recordStream(concurrent: Int) {
        self.storage.withLock {
            $0.counters.streams += 1
            $0.counters.peakConcurrentStreams = max($0.counters.peakConcurrentStreams, concurrent)
        }
    }

    package func recordGoAway() {
        self.storage.withLock { $0.counters.goAways += 1 }
    }

    package func recordSettingsUpdate() {
        self.storage.withLock { $0.counters.settingsUpdates += 1 }
    }

    package func append(_ notification: LoggedNotification) {
        self.storage.withLock {
            var entry = notification
            entry.sequence = $0.nextSequence
            $0.nextSequence += 1
            if $0.log.count < self.logCapacity {
                $0.log.append(entry)
            } else {
                $0.log[$0.logStart] = entry
                $0.logStart = ($0.logStart + 1) % self.logCapacity
                $0.counters.logEvictions += 1
            }
        }
    }

    package var counters: SimulatorCounters {
        self.storage.withLock { $0.counters }
    }

    /// How many accepted notifications the log holds (at most `logCapacity`): what
    /// `notifications(limit:).count` would say, without copying the log.
    package var loggedCount: Int {
        self.storage.withLock { $0.log.count }
    }

    /// Logged notifications, oldest first, that match every given filter; at most `limit`
    /// (the newest ones when more match).
    package func notifications(token: String? = nil, mId: String? = nil, id: String? = nil, limit: Int = 1000) -> [LoggedNotification] {
        let ordered: [LoggedNotification] = self.storage.withLock {
            Array($0.log[$0.logStart...] + $0.log[..<$0.logStart])
        }
        let matching = ordered.filter { entry in
            (token == nil || entry.token == token || entry.target == token)
                && (mId == nil || entry.mId == mId)
                && (id == nil || entry.id == id)
        }
        return Array(matching.suffix(max(0, limit)))
    }

    /// Clears the log and the counters, restores the start-up fault plan and stream limit.
    package func reset() {
        self.storage.withLock {
            $0.faults = $0.baselineFaults
            $0.counters = SimulatorCounters()
            $0.log = []
            $0.logStart = 0
            $0.maxConcurrentStreams = self.defaultMaxConcurrentStreams
        }
    }
}
