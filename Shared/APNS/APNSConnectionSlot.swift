import Synchronization

/// One position of a pool: the connection currently in it, and the health of the connections it
/// has had, which decides the backoff before the next one (100 ms doubling to 30 s, jittered).
///
/// A connection that fails to open, or closes before carrying any answer, counts as a failure;
/// any answer resets the count. A connection that served requests and then got GOAWAY is
/// replaced at once (that is APNs rotating connections, not a failure), so the pool never churns
/// against a server that keeps refusing it, and never stalls after an ordinary GOAWAY.
final class APNSConnectionSlot: Sendable {
    private struct State {
        var connection: APNSConnection
        var consecutiveFailures = 0
        var notBefore: ContinuousClock.Instant?
        /// Answers since the latest connection of this slot opened.
        var answersSinceOpen = 0
        /// Channels of this slot now open (briefly two while a GOAWAY'd one drains).
        var openChannels = 0
    }

    static let initialBackoff: Duration = .milliseconds(100)
    static let maximumBackoff: Duration = .seconds(30)

    let index: Int
    private let state: Mutex<State>
    private let makeConnection: @Sendable (_ generation: Int) -> APNSConnection

    init(index: Int, makeConnection: @escaping @Sendable (_ generation: Int) -> APNSConnection) {
        self.index = index
        self.makeConnection = makeConnection
        self.state = Mutex(State(connection: makeConnection(0)))
    }

    var connection: APNSConnection { self.state.withLock { $0.connection } }

    /// The connection to use now, or the time this slot is backing off until.
    func available(at now: ContinuousClock.Instant) -> Result<APNSConnection, BackingOff> {
        self.state.withLock {
            if let notBefore = $0.notBefore, notBefore > now {
                return .failure(BackingOff(until: notBefore, failures: $0.consecutiveFailures))
            }
            return .success($0.connection)
        }
    }

    struct BackingOff: Error {
        var until: ContinuousClock.Instant
        var failures: Int
    }

    /// Replaces `old` by a new connection (IdleTimeout, UnrelatedKeyIdInToken) unless another
    /// request already did; the old one closes once its requests are answered.
    func replace(_ old: APNSConnection) -> APNSConnection {
        let (current, replaced): (APNSConnection, Bool) = self.state.withLock {
            guard $0.connection === old else { return ($0.connection, false) }
            $0.connection = self.makeConnection(old.generation + 1)
            return ($0.connection, true)
        }
        if replaced { old.retire() }
        return current
    }

    // MARK: health

    func connectionOpened() {
        self.state.withLock {
            $0.openChannels += 1
            $0.answersSinceOpen = 0
        }
    }

    /// A channel closed: a failure when it was the slot's last one, of its current connection,
    /// and nothing was answered since it opened.
    func connectionClosed(generation: Int) {
        self.state.withLock {
            $0.openChannels -= 1
            guard $0.connection.generation == generation, $0.openChannels == 0, $0.answersSinceOpen == 0 else { return }
            Self.recordFailure(&$0)
        }
    }

    func answered() {
        self.state.withLock {
            $0.answersSinceOpen += 1
            $0.consecutiveFailures = 0
            $0.notBefore = nil
        }
    }

    func failedToConnect() {
        self.state.withLock { Self.recordFailure(&$0) }
    }

    private static func recordFailure(_ state: inout State) {
        state.consecutiveFailures += 1
        state.notBefore = ContinuousClock.now + Self.backoff(afterFailures: state.consecutiveFailures)
    }

    /// 100 ms doubling per failure up to 30 s, with jitter: a uniform draw from the upper half.
    static func backoff(afterFailures failures: Int) -> Duration {
        let exponent = min(max(failures - 1, 0), 20)
        let full = min(Self.initialBackoff * (1 << exponent), Self.maximumBackoff)
        return full * Double.random(in: 0.5...1.0)
    }
}
