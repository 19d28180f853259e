import Foundation
import Kafka
import Logging
import PushEvents
import PushStore
import PushWire
import ServiceLifecycle
import Synchronization

/// A sender instance: a member of the sender's consumer group on the message topic and the retry
/// topic, sending each record through a provider transport and publishing what became of it.
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
public final class MessageSender<Transport: MessageTransport>: Service {
    public typealias Message = Transport.Message

    public struct Topics: Sendable {
        public var messages: String
        public var retries: String
        public var results: String
        public var subscriptions: String

        public init(messages: String, retries: String, results: String, subscriptions: String) {
            self.messages = messages
            self.retries = retries
            self.results = results
            self.subscriptions = subscriptions
        }
    }

    let transport: Transport
    let settings: SenderSettings
    let topics: Topics
    let producer: KafkaProducer
    let deadLetters: DeadLetterPublisher
    let suspensions: CredentialSuspensions
    let consumerConfiguration: KafkaConsumerConfiguration
    let logger: Logger
    let now: @Sendable () -> Date
    let metrics: SenderMetrics

    private let held: AsyncSemaphore
    private let inFlight: AsyncSemaphore
    /// The sends that must wait (a token, a resend), run in `run()`'s task group.
    private let waitingSends = WaitingSends()
    private let state = Mutex(State())
    /// Records finished by a provider or otherwise whose events wait to be published, and
    /// whether a task is publishing them: apart from `state`, so that the event loops handing
    /// answers over do not contend with the reader and the offsets for one lock.
    private let waiting = Mutex(Waiting())
    private struct Waiting {
        var finished: [Finished] = []
        var publishing = false
    }
    /// Sends in flight (the gauge and the wait for them when stopping).
    private let sending = Atomic(0)
    /// Wakes the publisher task when an answer arrives while it is idle (`send`).
    private let wakeups: AsyncStream<Void>
    private let wakeUp: AsyncStream<Void>.Continuation

    /// A record read and not yet finished, with what it holds. A class: it is handed from the
    /// reader to the transport's callback to the publisher, one reference instead of a copy of
    /// every string and array in it each time.
    final class Work: Sendable {
        let record: KafkaConsumerRecord
        let message: Message
        let metadata: EventMetadata

        init(record: KafkaConsumerRecord, message: Message, metadata: EventMetadata) {
            self.record = record
            self.message = message
            self.metadata = metadata
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
    }

    private struct State: Sendable {
        var consumer: KafkaConsumer?
        private(set) var progress: [KafkaTopicPartition: PartitionProgress] = [:]
        /// The sums of `held` and `finishedBehindUnfinished` over `progress`, kept up to date by
        /// `update` so that the gauges cost the same whatever the number of partitions.
        private(set) var held = 0
        private(set) var finishedBehind = 0
        var schedule = RetrySchedule<Work>()
        var scheduleClosed = false
        /// Records finished since the last commit the broker confirmed.
        var finishedSinceCommit = 0

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
    public init(
        transport: Transport, settings: SenderSettings, topics: Topics, producer: KafkaProducer,
        deadLetters: DeadLetterPublisher, suspensions: CredentialSuspensions, consumer: KafkaConsumerConfiguration,
        logger: Logger, now: @escaping @Sendable () -> Date = Date.init
    ) {
        self.transport = transport
        self.settings = settings
        self.topics = topics
        self.producer = producer
        self.deadLetters = deadLetters
        self.suspensions = suspensions
        var configuration = consumer
        configuration.groupID = settings.group
        configuration.topics = [topics.messages, topics.retries]
        // A sender may wait up to a retry delay for room before it reads again (see `maxHeld`).
        configuration.maxPollIntervalMilliseconds = max(configuration.maxPollIntervalMilliseconds, settings.retryMaxMilliseconds + 300_000)
        self.consumerConfiguration = configuration
        var logger = logger
        logger[metadataKey: "sender"] = .string(transport.provider)
        self.logger = logger
        self.now = now
        self.metrics = SenderMetrics(provider: transport.provider)
        held = AsyncSemaphore(permits: settings.maxHeld)
        inFlight = AsyncSemaphore(permits: settings.maxInFlight)
        (wakeups, wakeUp) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    // Specialized for the two transports: unspecialized, every lock of `state` and every
    // `Work` looked up its generic metadata at run time (about 4 % of an APNs sender's profile
    // samples; 1.3 % after, docs/benchmarks.md).
    @_specialize(exported: false, kind: full, where Transport == APNSTransport)
    @_specialize(exported: false, kind: full, where Transport == FCMTransport)
    public func run() async throws {
        let consumer = try KafkaConsumer(
            configuration: consumerConfiguration,
            revocationHandler: { [self] partitions in await handBack(partitions) },
            logger: logger
        )
        state.withLock { $0.consumer = consumer }
        do {
            try await withThrowingDiscardingTaskGroup { group in
                group.addTask { try await self.runSchedule() }
                group.addTask { try await self.runCommits(consumer) }
                group.addTask { await self.runPublisher() }
                group.addTask { await self.waitingSends.run() }
                reading: for try await batch in consumer.batches.cancelOnGracefulShutdown() {
                    for record in batch {
                        // Stopping while waiting for room: this record and the rest of the batch
                        // are not begun, so their offsets are not stored; they are read again.
                        guard try await waitForRoom() else { break reading }
                        try await take(record, group: &group)
                    }
                    updateGauges()
                }
                // Stopping: hand back what waits for a retry time, wait for the sends in flight
                // to be answered; the publisher then publishes what is left and ends.
                let waiting = state.withLock { state in
                    state.scheduleClosed = true
                    return state.schedule.removeAll { _ in true }
                }
                await handBack(waiting)
                while sending.load(ordering: .acquiring) > 0, !Task.isCancelled {
                    try? await Task.sleep(for: .milliseconds(5))
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

    // MARK: reading

    /// Takes a permit to hold one more record; false if the sender is stopping meanwhile.
    private func waitForRoom() async throws -> Bool {
        while !held.tryAcquire() {
            if Task.isShuttingDownGracefully { return false }
            try await Task.sleep(for: .milliseconds(5))
        }
        return true
    }

    /// Begins a record (its permit is taken): sends it, schedules it, or sets it aside.
    private func take(_ record: KafkaConsumerRecord, group: inout ThrowingDiscardingTaskGroup<any Error>) async throws {
        state.withLock { $0.update(record.topicPartition) { $0.begin(record.offset) } }
        let work: Work
        do {
            switch try Message.decodeRecord(record.value) {
            case .known(let message, let metadata):
                work = Work(record: record, message: message, metadata: metadata)
            case .unknown(let metadata):
                logger.debug("Skipping a record of another type", metadata: ["type": "\(metadata.type)", "version": "\(metadata.version)"])
                finish(record)
                return
            }
        } catch {
            group.addTask { await self.deadLetter(record, reason: "\(error)") }
            return
        }
        let now = now()
        if work.message.validUntil <= now {
            let records = try expired(work, at: now)
            group.addTask { await self.publishOutcome(of: work, records: [records], count: Tally(outcome: "expired")) }
        } else if let notBefore = work.message.notBefore, notBefore > now {
            state.withLock { $0.schedule.insert(work, due: notBefore) }
            updateGauges()
        } else {
            try await inFlight.acquire()
            send(work)
        }
    }

    /// Sends the records whose retry time came, until the sender stops.
    private func runSchedule() async throws {
        while true {
            let (due, closed) = state.withLock { state in (state.schedule.popDue(now()), state.scheduleClosed) }
            if !due.isEmpty { updateGauges() }
            for work in due {
                try await inFlight.acquire()
                send(work)
            }
            if closed { return }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// Commits stored offsets every `commitInterval` (librdkafka's own auto-commit is once a
    /// second): what a SIGKILL makes the next owner send again is what was held plus what was
    /// finished since the last commit, and this keeps the second part small and measured.
    private func runCommits(_ consumer: KafkaConsumer) async throws {
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

    // MARK: sending

    /// Sends a record whose in-flight permit is taken. No task per message: the transport calls
    /// back with the outcome (usually on the connection's event loop), which only queues it for
    /// the publisher, so encoding the result events stays off the event loop.
    private func send(_ work: Work) {
        sending.wrappingAdd(1, ordering: .relaxed)
        let started = ContinuousClock.now
        transport.send(work.message, waiting: waitingSends) { [self] outcome in
            metrics.sendLatency.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
            let wake = waiting.withLock { waiting in
                waiting.finished.append(.sent(work, outcome))
                guard !waiting.publishing else { return false }
                waiting.publishing = true
                return true
            }
            inFlight.release()
            if wake { wakeUp.yield() }
            // Last: stopping waits for this to reach zero, then ends the wake-ups.
            sending.wrappingSubtract(1, ordering: .releasing)
        }
    }

    /// Publishes the answers `send` queued, woken when they arrive while nobody publishes; ends
    /// once the sender stops and nothing is left.
    private func runPublisher() async {
        for await _ in wakeups {
            await publishWaiting()
        }
        // Stopped; a last look in case the final wake-up was not consumed.
        if waiting.withLock({ waiting in
            guard !waiting.publishing, !waiting.finished.isEmpty else { return false }
            waiting.publishing = true
            return true
        }) {
            await publishWaiting()
        }
    }

    /// Publishes batches until none waits (the caller is the publisher).
    private func publishWaiting() async {
        while let batch = nextOutcomes() {
            await publish(batch)
        }
    }

    /// What `push_sender_messages_total` counts once the outcome is stored.
    struct Tally: Sendable {
        var outcome: String
        var reason = ""
        var failureType = ""
    }

    /// The records that say what became of a message, and how it is counted.
    func consequences(of outcome: SendOutcome, for work: Work) throws -> ([KafkaProducerRecord], Tally) {
        let message = work.message
        let now = now()
        switch outcome {
        case .sent(let providerMessageId):
            let sent = MessageSent(message: message.reference, providerMessageId: providerMessageId, attempts: message.attempt, sentAt: now)
            return ([try result(sent, of: work)], Tally(outcome: "sent"))
        case .tokenInvalid(let reason, let invalidSince):
            let failed = MessageFailed(message: message.reference, failureType: "hard", reason: reason, attempts: message.attempt, failedAt: now)
            let disabled = SubscriptionDisabled(appId: message.appId, registrationToken: message.registrationToken, reason: reason, invalidSince: invalidSince ?? now)
            let envelope = EventEnvelope(
                key: SubscriptionRegistered.key(appId: message.appId, registrationToken: message.registrationToken), payload: disabled,
                correlationId: message.deliveryId, causationId: work.metadata.id.lowercaseText
            )
            return ([try result(failed, of: work), try KafkaProducerRecord(topic: topics.subscriptions, event: envelope)], Tally(outcome: "failed", reason: reason, failureType: "hard"))
        case .failed(let reason):
            let failed = MessageFailed(message: message.reference, failureType: "soft", reason: reason, attempts: message.attempt, failedAt: now)
            return ([try result(failed, of: work)], Tally(outcome: "failed", reason: reason, failureType: "soft"))
        case .credentialRejected(let reason, let credential):
            // Requests already in flight when the credential was suspended come back refused
            // too: they wait like the rest instead of failing (one failure per cool-down).
            if let until = suspensions.suspendedUntil(credential, now: now) {
                guard until < message.validUntil else { return ([try expired(work, at: now)], Tally(outcome: "expired", reason: reason)) }
                var next = message
                next.notBefore = until
                return ([try retryRecord(next, of: work)], Tally(outcome: "deferred", reason: reason))
            }
            metrics.credentialErrors.increment()
            suspensions.suspend(credential, until: now.addingTimeInterval(Double(settings.credentialCooldownMilliseconds) / 1000))
            logger.error("The provider refused the app's credentials; its messages wait while they are suspended", metadata: [
                "app": "\(message.appId)", "delivery.id": "\(message.deliveryId)", "message.id": "\(message.reference.messageId)",
                "reason": "\(reason)", "suspended.ms": "\(settings.credentialCooldownMilliseconds)",
            ])
            let failed = MessageFailed(message: message.reference, failureType: "soft", reason: reason, attempts: message.attempt, failedAt: now)
            return ([try result(failed, of: work)], Tally(outcome: "failed", reason: reason, failureType: "soft"))
        case .retry(let reason, let after, let atLeast):
            let delay = settings.retryPolicy.delay(afterAttempt: message.attempt, after: after, atLeast: atLeast)
            let due = now.addingTimeInterval(Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18)
            guard due < message.validUntil else { return ([try expired(work, at: now)], Tally(outcome: "expired", reason: reason)) }
            var next = message
            next.attempt += 1
            next.notBefore = due
            return ([try retryRecord(next, of: work)], Tally(outcome: "retried", reason: reason))
        case .deferred(let reason, let until):
            guard until < message.validUntil else { return ([try expired(work, at: now)], Tally(outcome: "expired", reason: reason)) }
            var next = message
            next.notBefore = until
            return ([try retryRecord(next, of: work)], Tally(outcome: "deferred", reason: reason))
        }
    }

    private func result(_ payload: some PushEvent, of work: Work) throws -> KafkaProducerRecord {
        let envelope = EventEnvelope(
            key: work.message.messageId.lowercaseText, payload: payload,
            correlationId: work.message.deliveryId, causationId: work.metadata.id.lowercaseText
        )
        return try KafkaProducerRecord(topic: topics.results, event: envelope)
    }

    private func expired(_ work: Work, at now: Date) throws -> KafkaProducerRecord {
        try result(MessageExpired(message: work.message.reference, attempts: work.message.attempt - 1, expiredAt: now), of: work)
    }

    private func retryRecord(_ message: Message, of work: Work) throws -> KafkaProducerRecord {
        let envelope = EventEnvelope(
            key: message.recordKey, payload: message,
            correlationId: message.deliveryId, causationId: work.metadata.id.lowercaseText
        )
        var record = try KafkaProducerRecord(topic: topics.retries, event: envelope)
        record.headers += [
            KafkaHeader(name: "push-delivery-id", string: message.deliveryId),
            KafkaHeader(name: "push-message-id", string: message.messageId.lowercaseText),
        ]
        return record
    }

    // MARK: finishing

    /// Publishes the outcome's events; once the broker stored them all, the record is finished.
    ///
    /// Outcomes are published in batches: the task whose outcome arrives while nobody publishes
    /// becomes the publisher and sends every outcome waiting, in one `send`, until none waits;
    /// the others leave their outcome and end. So at thousands of messages a second there is
    /// one delivery wait, one offset store and one gauge update per batch (the outcomes that
    /// arrived during the previous batch's round trip), not per message. The batch size adapts
    /// to the rate; each outcome's records are still finished only once stored.
    private func publishOutcome(of work: Work, records: [KafkaProducerRecord], count: Tally) async {
        let publisher = waiting.withLock { waiting in
            waiting.finished.append(.outcome(Outcome(record: work.record, events: records, tally: count)))
            guard !waiting.publishing else { return false }
            waiting.publishing = true
            return true
        }
        guard publisher else { return }
        await publishWaiting()
    }

    /// The outcomes waiting, with the events of the answers among them, or nil (and no longer
    /// publishing) when none wait.
    private func nextOutcomes() -> [Outcome]? {
        let finished: [Finished]? = waiting.withLock { waiting in
            guard !waiting.finished.isEmpty else {
                waiting.publishing = false
                return nil
            }
            defer { waiting.finished.removeAll(keepingCapacity: true) }
            return waiting.finished
        }
        guard let finished else { return nil }
        var outcomes: [Outcome] = []
        outcomes.reserveCapacity(finished.count)
        for entry in finished {
            switch entry {
            case .outcome(let outcome):
                outcomes.append(outcome)
            case .sent(let work, let outcome):
                do {
                    let (records, tally) = try consequences(of: outcome, for: work)
                    outcomes.append(Outcome(record: work.record, events: records, tally: tally))
                } catch {
                    // Encoding our own events cannot fail for valid messages; keep the record unfinished.
                    logger.error("Could not encode a result event", metadata: ["error": "\(error)"])
                    abandon(work.record)
                }
            }
        }
        return outcomes
    }

    /// Publishes a batch of outcomes: those whose events are all stored are finished together;
    /// the others send their failed events again (with backoff) and are finished or abandoned
    /// one by one.
    private func publish(_ batch: [Outcome]) async {
        let results = await producer.send(batch.flatMap(\.events))
        var stored: [Outcome] = []
        stored.reserveCapacity(batch.count)
        var failed: [Outcome] = []
        var index = 0
        for var outcome in batch {
            let mine = results[index..<(index + outcome.events.count)]
            index += outcome.events.count
            if mine.allSatisfy({ if case .success = $0 { true } else { false } }) {
                stored.append(outcome)
            } else {
                outcome.events = zip(outcome.events, mine).compactMap { event, result in
                    if case .failure = result { event } else { nil }
                }
                failed.append(outcome)
            }
        }
        finish(stored)
        for outcome in failed {
            if await publish(outcome.events) {
                finish([outcome])
            } else {
                abandon(outcome.record)
            }
        }
    }

    /// Sends until the broker stored every record. Gives up (the record stays unfinished and is
    /// read again by the partition's next owner) only when stopping and the broker still fails.
    private func publish(_ records: [KafkaProducerRecord]) async -> Bool {
        var delay = Duration.milliseconds(100)
        var failures = 0
        var pending = records
        while true {
            let results = await producer.send(pending)
            var failed: [KafkaProducerRecord] = []
            var lastError: KafkaError?
            for (record, result) in zip(pending, results) {
                if case .failure(let error) = result {
                    failed.append(record)
                    lastError = error
                }
            }
            if failed.isEmpty { return true }
            failures += 1
            logger.warning("Could not store a sender's events; retrying", metadata: ["error": "\(lastError.map { "\($0)" } ?? "")", "attempt": "\(failures)"])
            if Task.isCancelled || (Task.isShuttingDownGracefully && failures >= 3) { return false }
            pending = failed
            try? await Task.sleep(for: delay)
            delay = min(delay * 2, .seconds(5))
        }
    }

    private func deadLetter(_ record: KafkaConsumerRecord, reason: String) async {
        do {
            try await deadLetters.publish([(record, reason)])
            metrics.deadLetters.increment()
            logger.warning("Record set aside to the dead-letter topic", metadata: [
                "topic": "\(record.topic)", "partition": "\(record.partition)", "offset": "\(record.offset)", "reason": "\(reason)",
            ])
            finish(record)
        } catch {
            logger.error("Could not publish a dead letter; the record is read again later", metadata: ["error": "\(error)"])
            abandon(record)
        }
    }

    /// Re-appends records waiting for their retry time to the retry topic, unchanged, and finishes
    /// them: for partitions being revoked (`partitions`) or all of them when stopping (`waiting`).
    private func handBack(_ partitions: [KafkaTopicPartition]) async {
        let revoked = Set(partitions)
        let waiting = state.withLock { $0.schedule.removeAll { revoked.contains($0.record.topicPartition) } }
        await handBack(waiting)
        // Sends in flight on these partitions finish and publish before the partitions go.
        while state.withLock({ state in revoked.contains { (state.progress[$0]?.held ?? 0) > 0 } }) {
            try? await Task.sleep(for: .milliseconds(10))
        }
        state.withLock { state in
            for partition in revoked { state.remove(partition) }
        }
        updateGauges()
    }

    private func handBack(_ waiting: [Work]) async {
        guard !waiting.isEmpty else { return }
        let records = waiting.map { work in
            KafkaProducerRecord(topic: topics.retries, key: work.record.key, value: work.record.value, headers: work.record.headers)
        }
        if await publish(records) {
            finish(waiting.map { Outcome(record: $0.record, events: [], tally: Tally(outcome: "handed_back")) })
            logger.info("Handed back records waiting for a retry", metadata: ["records": "\(waiting.count)"])
        } else {
            for work in waiting { abandon(work.record) }
        }
    }

    /// The record is done: its offset is stored once every earlier record of its partition is.
    private func finish(_ record: KafkaConsumerRecord) {
        finish([Outcome(record: record, events: [], tally: nil)])
    }

    /// The records are done (their events stored): counted, and the offsets they complete
    /// stored with one call.
    private func finish(_ outcomes: [Outcome]) {
        guard !outcomes.isEmpty else { return }
        for case let tally? in outcomes.map(\.tally) {
            metrics.count(tally.outcome, reason: tally.reason, failureType: tally.failureType)
        }
        state.withLock { state in
            state.finishedSinceCommit += outcomes.count
            var offsets: [KafkaTopicPartition: Int64] = [:]
            for outcome in outcomes {
                let record = outcome.record
                guard state.progress[record.topicPartition] != nil,
                    let next = state.update(record.topicPartition, { $0.finish(record.offset) })
                else { continue }
                offsets[record.topicPartition] = next  // increases within a partition
            }
            do {
                try state.consumer?.storeOffsets(offsets)
            } catch {
                logger.warning("Could not store an offset", metadata: ["error": "\(error)"])
            }
        }
        held.release(outcomes.count)
        updateGauges()
    }

    /// The record stays unfinished (its offset is never stored by this instance); it no longer
    /// counts as held so that stopping and rebalancing do not wait for it.
    private func abandon(_ record: KafkaConsumerRecord) {
        state.withLock { state in
            guard state.progress[record.topicPartition] != nil else { return }
            state.update(record.topicPartition) { $0.abandon() }
        }
        held.release()
        updateGauges()
    }

    private func updateGauges() {
        let (held, waiting, window) = state.withLock { state in
            // An upper bound: records finished behind an unfinished one may be counted twice.
            (state.held, state.schedule.count, state.held + state.finishedBehind + state.finishedSinceCommit)
        }
        let inFlight = sending.load(ordering: .relaxed)
        metrics.held.record(held)
        metrics.waitingRetries.record(waiting)
        metrics.inFlight.record(inFlight)
        metrics.resendWindow.record(window)
    }
}
