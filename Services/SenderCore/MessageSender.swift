import Foundation
import Kafka
import Logging
import Metrics
import PushEvents
import PushRuntime
import PushStore
import PushWire
import ServiceLifecycle
import Synchronization

/// A sender instance: a member of the sender's consumer group on the message topic and the retry
/// topic (or, for the throttled lane, on the throttled topic alone), sending each record through
/// a provider transport and publishing what became of it.
///
/// Guarantees (docs/senders.md):
/// - A record's offset is stored only once the events of its outcome (`MessageSent`,
///   `MessageFailed`, `SubscriptionDisabled`, `MessageExpired`, or its retry record) are stored by
///   the broker, and only when every earlier record of its partition is finished too.
/// - SIGTERM and rebalances: reading stops, sends in flight finish and publish their outcome,
///   records waiting for a retry time are handed back (re-appended unchanged to the retry topic),
///   then offsets are committed: the next owner sends nothing twice.
/// - SIGKILL: the records past the committed offset are read again by the next owner and those
///   already sent are sent again; `push_sender_resend_window` shows how many that is at any time.
/// - A record that is not a message goes to `<topic>.dlq` with the reason; reading goes on.
package final class MessageSender<Transport: MessageTransport>: Service {
    package typealias Message = Transport.Message

    package struct Topics: Sendable {
        /// What this sender reads first-hand: a lane's message topic, or the throttled topic.
        package var messages: String
        /// Where retries and paused deliveries' messages go (and, read here too unless this is
        /// the throttled topic's sender, come back from).
        package var retries: String
        /// Where a message is set aside until its throttle slot (`push.<p>.throttled`).
        package var throttled: String
        package var results: String
        package var subscriptions: String

        package init(messages: String, retries: String, throttled: String, results: String, subscriptions: String) {
            self.messages = messages
            self.retries = retries
            self.throttled = throttled
            self.results = results
            self.subscriptions = subscriptions
        }

        /// The throttled topic's sender reads that topic only: its records come back there.
        var readsThrottled: Bool { messages == throttled }

        /// The topics the consumer reads.
        var read: [String] { readsThrottled ? [throttled] : [messages, retries] }

        /// Where a record waiting in memory is re-appended when this instance stops or loses its
        /// partition: the topic it came through (the retry topic stands for a lane's two).
        var handBack: String { readsThrottled ? throttled : retries }
    }

    let transport: Transport
    let settings: SenderSettings
    let topics: Topics
    let producer: any SenderEventSink
    let deadLetters: any SenderDeadLetters
    let suspensions: CredentialSuspensions
    /// Deliveries an operator cancelled or paused (`push.delivery_controls`).
    let controls: any SenderControls
    /// The send slots of throttled deliveries, shared through PostgreSQL (`ThrottleSlots`).
    let throttle: any SenderThrottle
    /// The data keys of sealed records, read per batch (`MessageKeys`).
    let keys: any SenderKeys
    let consumerConfiguration: KafkaConsumerConfiguration
    let makeConsumer: SenderConsumerFactory
    /// What becomes of a message, from the settings (`MessageLife`).
    let rules: MessageLife.Rules
    let logger: Logger
    let now: @Sendable () -> Date
    let metrics: SenderMetrics

    /// Permits to hold a record (read and not finished): `maxHeld`. Closed when the sender stops,
    /// so a reader waiting for room stops waiting.
    let held: AsyncSemaphore
    /// Permits to have a send in flight: `maxInFlight`. Stopping takes them all back, which is
    /// waiting for every send in flight to be answered.
    let inFlight: AsyncSemaphore
    let state = Mutex(State())
    /// Wakes the schedule task when a record due earlier than any before is scheduled, or when
    /// the schedule closes.
    let scheduleChanged = Wakeup()
    /// The longest the schedule waits without reading the wall clock again (`runSchedule`).
    static var scheduleRecheck: Duration { .seconds(1) }
    /// The sends that must wait (a token, a resend), run in `run()`'s task group.
    let waitingSends = WaitingSends()
    /// Records finished by a provider or otherwise whose events wait to be published, and
    /// whether a task is publishing them: apart from `state`, so that the event loops handing
    /// answers over do not contend with the reader and the offsets for one lock.
    let waiting = Mutex(Waiting())
    struct Waiting {
        var finished: [Finished] = []
        var publishing = false
    }
    /// Sends in flight (the gauge and the wait for them when stopping).
    let sending = Atomic(0)
    /// Wakes the publisher task when an answer arrives while it is idle (`send`).
    let wakeups: AsyncStream<Void>
    let wakeUp: AsyncStream<Void>.Continuation

    /// A record read and not yet finished, with what it holds. A class: it is handed from the
    /// reader to the transport's callback to the publisher, one reference instead of a copy of
    /// every string and array in it each time.
    final class Work: Sendable {
        let record: KafkaConsumerRecord
        let message: Message
        let metadata: EventMetadata
        /// Where the message stands when this reference was made (a new `Work` at each hand-over:
        /// to the schedule, to the transport).
        let life: MessageLife

        init(record: KafkaConsumerRecord, message: Message, metadata: EventMetadata, life: MessageLife) {
            self.record = record
            self.message = message
            self.metadata = metadata
            self.life = life
        }

        func with(_ life: MessageLife) -> Work {
            Work(record: record, message: message, metadata: metadata, life: life)
        }
    }

    /// A record waiting for its events to be published: its outcome already turned into events,
    /// or a provider's answer the publisher turns into events (off the event loop that answered).
    enum Finished: Sendable {
        case outcome(Outcome)
        case sent(Work, SendOutcome)
    }

    /// What became of a record: the events to publish, then how it is counted once they are stored.
    struct Outcome: Sendable {
        var record: KafkaConsumerRecord
        var events: [KafkaProducerRecord]
        /// Nil: not counted (a record of another type, a dead letter).
        var tally: Tally?
        /// When its message was planned, for `push_sender_planned_to_final_seconds` once a final
        /// status is stored; nil for records that are not a message.
        var plannedAt: Date? = nil
    }

    struct State: Sendable {
        var consumer: (any SenderConsumer)?
        private(set) var progress: [KafkaTopicPartition: PartitionProgress] = [:]
        /// The sums of `held` and `finishedBehindUnfinished` over `progress`, kept up to date by
        /// `update` so that the gauges cost the same whatever the number of partitions.
        private(set) var held = 0
        private(set) var finishedBehind = 0
        var schedule = RetrySchedule<Work>()
        var scheduleClosed = false
        /// The messages held here and those finished lately: twins are not sent (`MessageLedger`).
        var ledger = MessageLedger()
        /// Records finished since the last commit the broker confirmed.
        var finishedSinceCommit = 0
        /// Revocations waiting for their partitions' held records to be finished (`handBack`).
        var drainWaiters: [(partitions: Set<KafkaTopicPartition>, continuation: CheckedContinuation<Void, Never>)] = []

        /// Removes and returns the waiters whose partitions hold nothing any more.
        mutating func drainedWaiters() -> [CheckedContinuation<Void, Never>] {
            guard !drainWaiters.isEmpty else { return [] }
            var done: [CheckedContinuation<Void, Never>] = []
            drainWaiters.removeAll { waiter in
                guard !waiter.partitions.contains(where: { (progress[$0]?.held ?? 0) > 0 }) else { return false }
                done.append(waiter.continuation)
                return true
            }
            return done
        }

        /// Changes one partition's progress (created if new) and the totals with it.
        mutating func update<Result>(_ partition: KafkaTopicPartition, _ body: (inout PartitionProgress) -> Result) -> Result {
            var progress = self.progress.removeValue(forKey: partition) ?? PartitionProgress()
            held -= progress.held
            finishedBehind -= progress.finishedBehindUnfinished
            defer {
                held += progress.held
                finishedBehind += progress.finishedBehindUnfinished
                self.progress[partition] = progress
            }
            return body(&progress)
        }

        /// Forgets a partition that this instance no longer owns.
        mutating func remove(_ partition: KafkaTopicPartition) {
            guard let progress = progress.removeValue(forKey: partition) else { return }
            held -= progress.held
            finishedBehind -= progress.finishedBehindUnfinished
        }
    }

    /// - Parameter consumer: brokers and timeouts; group and topics come from `settings` and `topics`.
    package init(
        transport: Transport, settings: SenderSettings, topics: Topics, producer: any SenderEventSink,
        deadLetters: any SenderDeadLetters, suspensions: CredentialSuspensions, controls: any SenderControls, throttle: any SenderThrottle,
        keys: any SenderKeys, consumer: KafkaConsumerConfiguration, makeConsumer: @escaping SenderConsumerFactory = KafkaConsumer.senderConsumer,
        logger: Logger, now: @escaping @Sendable () -> Date = Date.init, metricsFactory: any MetricsFactory = MetricsSystem.factory
    ) {
        self.transport = transport
        self.settings = settings
        self.topics = topics
        self.producer = producer
        self.deadLetters = deadLetters
        self.suspensions = suspensions
        self.controls = controls
        self.throttle = throttle
        self.keys = keys
        self.consumerConfiguration = settings.consumer(consumer, topics: topics.read, readsThrottled: topics.readsThrottled)
        self.makeConsumer = makeConsumer
        self.rules = MessageLife.Rules(
            retryPolicy: settings.retryPolicy, pauseRecheck: Double(settings.pauseRecheckMilliseconds) / 1000,
            credentialCooldown: Double(settings.credentialCooldownMilliseconds) / 1000)
        var logger = logger
        logger[metadataKey: "sender"] = .string(transport.provider)
        logger[metadataKey: "lane"] = .string(settings.lane.rawValue)
        self.logger = logger
        self.now = now
        self.metrics = SenderMetrics(provider: transport.provider, lane: settings.lane.rawValue, factory: metricsFactory)
        held = AsyncSemaphore(permits: settings.maxHeld)
        inFlight = AsyncSemaphore(permits: settings.maxInFlight)
        (wakeups, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // Specialized for the two transports: unspecialized, every lock of `state` and every
    // `Work` looked up its generic metadata at run time (about 4 % of an APNs sender's profile
    // samples; 1.3 % after, docs/benchmarks.md).
    @_specialize(exported:false,kind:full,where Transport == APNSTransport)
    @_specialize(exported:false,kind:full,where Transport == FCMTransport)
    package func run() async throws {
        // Nothing is read before the controls are: a cancelled delivery's messages are not
        // sent while the table is being read after a restart.
        await controls.loaded()
        let consumer = try makeConsumer(consumerConfiguration, { [self] partitions in await handBack(partitions) }, logger)
        state.withLock { $0.consumer = consumer }
        do {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await self.runSchedule() }
                group.addTask { try await self.runCommits(consumer) }
                group.addTask { await self.runPublisher() }
                group.addTask { await self.waitingSends.run() }
                // A reader waiting for room stops waiting when the sender is asked to stop.
                try await withGracefulShutdownHandler {
                    reading: for try await batch in ConsumerBatches(consumer: consumer).cancelOnGracefulShutdown() {
                        // Each record parsed once; the data keys of the sealed ones in one query.
                        let decoded = batch.map { record in Result { () throws(EventDecodingError) in try Message.decodeRecord(record.value) } }
                        let subjects = Set(decoded.compactMap { if case .success(.known(let message, _)) = $0 { message.sealing?.subjectId } else { nil } })
                        let keys = try await self.keys.keys(of: subjects)
                        for (record, decoded) in zip(batch, decoded) {
                            // Stopping while waiting for room: this record and the rest of the batch
                            // are not begun, so their offsets are not stored; they are read again.
                            guard try await waitForRoom() else { break reading }
                            try await take(record, decoded: decoded, keys: keys, group: &group)
                        }
                        updateGauges()
                    }
                } onGracefulShutdown: { [held] in
                    held.close()
                }
                // Stopping: hand back what waits for a retry time, wait for the sends in flight
                // to be answered (every in-flight permit back); the publisher then publishes what
                // is left and ends.
                let waiting = state.withLock { state in
                    state.scheduleClosed = true
                    return state.schedule.removeAll { _ in true }
                }
                scheduleChanged.signal()
                await handBack(waiting)
                let unanswered = await waitForAnswers(within: .milliseconds(settings.answersOnStopMilliseconds))
                if unanswered > 0 {
                    logger.warning(
                        "Stopping without the answers to some sends; their records are read again by the next owner",
                        metadata: ["sends": "\(unanswered)", "waited.ms": "\(settings.answersOnStopMilliseconds)"])
                }
                waitingSends.finish()
                wakeUp.finish()
            }
        } catch {
            await consumer.close()
            throw error
        }
        let window = state.withLock { $0.held }
        if window > 0 { logger.warning("Stopping with records not finished; they are read again", metadata: ["records": "\(window)"]) }
        await consumer.close()
    }

    /// Takes every in-flight permit back, waiting for the sends in flight to be answered, for
    /// `limit` at most. Returns how many were still unanswered then: their answers, if they come,
    /// are not published, and their records stay unfinished (offsets not stored).
    private func waitForAnswers(within limit: Duration) async -> Int {
        let answered = await withTaskGroup(of: Bool.self) { group in
            group.addTask { [inFlight, settings] in (try? await inFlight.acquire(settings.maxInFlight)) != nil }
            group.addTask { [inFlight] in
                do { try await Task.sleep(for: limit) } catch { return true }
                // Ends the wait above: the permits still out are the sends left unanswered.
                inFlight.close()
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
        return answered ? 0 : sending.load(ordering: .relaxed)
    }

    // MARK: reading

    /// Takes a permit to hold one more record; false if the sender is stopping (also when room
    /// is free: the rest of a batch read before the stop is not begun, or a slow provider would
    /// hold the shutdown up for a whole batch's sends).
    private func waitForRoom() async throws -> Bool {
        if Task.isShuttingDownGracefully { return false }
        if held.tryAcquire() { return true }
        // About to wait (for the publisher, perhaps): the gauges show what is held now, or a
        // SIGKILL during the wait would find `push_sender_resend_window` as the batch found it.
        updateGauges()
        do {
            try await held.acquire()
            return true
        } catch is AsyncSemaphore.Closed {
            return false
        }
    }

    /// Begins a record (its permit is taken): sends it, schedules it, or publishes what became
    /// of it. A sealed record is opened with its subject's key from `keys`.
    private func take(
        _ record: KafkaConsumerRecord, decoded: Result<DecodedEvent<Message>, EventDecodingError>, keys: [UUID: [UInt8]],
        group: inout ThrowingDiscardingTaskGroup<any Error>
    ) async throws {
        state.withLock { $0.update(record.topicPartition) { $0.begin(record.offset) } }
        let read: Message
        let metadata: EventMetadata
        do {
            switch try decoded.get() {
            case .known(let message, let known):
                (read, metadata) = (message, known)
            case .unknown(let metadata):
                logger.debug("Skipping a record of another type", metadata: ["type": "\(metadata.type)", "version": "\(metadata.version)"])
                finish(record)
                return
            }
        } catch {
            group.addTask { await self.deadLetter(record, reason: "\(error)") }
            return
        }
        var message = read
        var opening = MessageLife.Opening.opened
        if let sealing = read.sealing {
            if let key = keys[sealing.subjectId] {
                // Not opened: the result names the device by the sealing's digest.
                if let opened = read.opened(with: key) { message = opened } else { opening = .unopened(reason: "unreadable") }
            } else {
                opening = .unopened(reason: "erased")
            }
        }
        var life = MessageLife(message, slot: ThrottleHeader.slot(in: record.headers))
        // A second record of a message held or finished here (written twice around a crash):
        // the first decides; this one is finished without a send or an event.
        let admitted = state.withLock { $0.ledger.admit(message.messageId) }
        let step = life.begin(admitted: admitted, opening: opening, control: controls.state(of: message.deliveryId), now: now(), rules: rules)
        if !admitted { logger.debug("Skipping a second record of a message held or finished here", metadata: ["message.id": "\(message.messageId)"]) }
        let work = Work(record: record, message: message, metadata: metadata, life: life)
        if let outcome = try await carryOut(step, of: work) { queueOutcome(outcome) }
    }

    /// Sends the records whose retry time came, until the sender stops: sleeps until the earliest
    /// one is due, or until a record due earlier is scheduled or the schedule closes. Retry times
    /// are wall-clock instants carried in the records (`notBefore`, set by whichever instance
    /// deferred the message), so a deadline computed from one clock reading is re-checked at
    /// least every `scheduleRecheck`: a wall clock that steps (NTP) neither delays a retry by the
    /// step nor sends it early.
    private func runSchedule() async throws {
        while true {
            let (due, closed, next) = state.withLock { state in
                (state.schedule.popDue(now()), state.scheduleClosed, state.schedule.nextDue)
            }
            if !due.isEmpty { updateGauges() }
            for work in due {
                // Cancelled or paused while it waited: not sent.
                var life = work.life
                let step = life.due(control: controls.state(of: work.message.deliveryId), now: now(), rules: rules)
                if let outcome = try await carryOut(step, of: work.with(life)) { queueOutcome(outcome) }
            }
            if closed { return }
            // Nothing scheduled: wait for the first record (its insert signals).
            let untilDue = next.map { Duration.milliseconds(Int64(max(0, $0.timeIntervalSince(now())) * 1000) + 1) }
            await scheduleChanged.wait(atMost: untilDue.map { min($0, Self.scheduleRecheck) })
        }
    }

    /// Commits stored offsets every `commitInterval` (librdkafka's own auto-commit is once a
    /// second): what a SIGKILL makes the next owner send again is what was held plus what was
    /// finished since the last commit, and this keeps the second part small and measured.
    private func runCommits(_ consumer: any SenderConsumer) async throws {
        while !state.withLock({ $0.scheduleClosed }) {
            try await Task.sleep(for: .milliseconds(settings.commitIntervalMilliseconds))
            let finished = state.withLock { $0.finishedSinceCommit }
            guard finished > 0 else { continue }
            do {
                try await consumer.commit()
                state.withLock { $0.finishedSinceCommit -= finished }
            } catch {
                logger.debug("Offset commit failed; retried at the next interval", metadata: ["error": "\(error)"])
            }
            updateGauges()
        }
    }
}

/// A sender consumer's batches as a sequence (for `cancelOnGracefulShutdown`).
struct ConsumerBatches: AsyncSequence, Sendable {
    typealias Element = [KafkaConsumerRecord]
    let consumer: any SenderConsumer

    func makeAsyncIterator() -> Iterator { Iterator(consumer: consumer) }

    struct Iterator: AsyncIteratorProtocol {
        let consumer: any SenderConsumer
        mutating func next() async throws -> [KafkaConsumerRecord]? { try await consumer.nextBatch() }
    }
}
