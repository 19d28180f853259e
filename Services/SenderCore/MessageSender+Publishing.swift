import Foundation
import Kafka
import Logging
import PushEvents
import PushStore
import ServiceLifecycle
import Synchronization

/// Publishing outcomes and finishing records: a record is finished (its offset may be stored)
/// only once the broker stored the events of its outcome.
extension MessageSender {
    // Outcomes are published in batches: every outcome is queued for the publisher task, which
    // sends all those waiting in one `send`, until none waits. So at thousands of messages a
    // second there is one delivery wait, one offset store and one gauge update per batch (the
    // outcomes that arrived during the previous batch's round trip), not per message. The batch
    // size adapts to the rate; each outcome's records are still finished only once stored.

    /// Queues an outcome for the publisher task and wakes it if idle.
    func queueOutcome(_ outcome: Outcome) {
        let wake = waiting.withLock { waiting in
            waiting.finished.append(.outcome(outcome))
            guard !waiting.publishing else { return false }
            waiting.publishing = true
            return true
        }
        if wake { wakeUp.yield() }
    }

    /// The outcomes waiting, with the events of the answers among them, or nil (and no longer
    /// publishing) when none wait.
    func nextOutcomes() -> [Outcome]? {
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
        var decisions: [(UUID, Bool)] = []
        decisions.reserveCapacity(finished.count)
        for entry in finished {
            switch entry {
            case .outcome(let outcome):
                outcomes.append(outcome)
            case .sent(let work, let outcome):
                do {
                    let answered = try answered(outcome, for: work)
                    outcomes.append(answered)
                    decisions.append((work.message.messageId, answered.tally?.isFinal ?? false))
                } catch {
                    // Encoding our own events cannot fail for valid messages; keep the record unfinished.
                    logger.error("Could not encode a result event", metadata: ["error": "\(error)"])
                    decisions.append((work.message.messageId, false))
                    abandon(work.record)
                }
            }
        }
        // Decided before they are published (`MessageLedger`).
        if !decisions.isEmpty {
            state.withLock { state in
                for (id, final) in decisions { state.ledger.decided(id, final: final) }
            }
        }
        return outcomes
    }

    /// Publishes a batch of outcomes: those whose events are all stored are finished together;
    /// the others send their failed events again (with backoff) and are finished or abandoned
    /// one by one.
    func publish(_ batch: [Outcome]) async {
        let errors = await producer.store(batch.flatMap(\.events))
        var stored: [Outcome] = []
        stored.reserveCapacity(batch.count)
        var failed: [Outcome] = []
        var index = 0
        for var outcome in batch {
            let mine = errors[index..<(index + outcome.events.count)]
            index += outcome.events.count
            if mine.allSatisfy({ $0 == nil }) {
                stored.append(outcome)
            } else {
                outcome.events = zip(outcome.events, mine).compactMap { event, error in error == nil ? nil : event }
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
    func publish(_ records: [KafkaProducerRecord]) async -> Bool {
        var delay = Duration.milliseconds(100)
        var failures = 0
        var pending = records
        while true {
            let errors = await producer.store(pending)
            var failed: [KafkaProducerRecord] = []
            var lastError: KafkaError?
            for (record, error) in zip(pending, errors) where error != nil {
                failed.append(record)
                lastError = error
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

    func deadLetter(_ record: KafkaConsumerRecord, reason: String) async {
        do {
            try await deadLetters.publish([(record, reason)])
            metrics.deadLetters.increment()
            logger.warning(
                "Record set aside to the dead-letter topic",
                metadata: [
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
    func handBack(_ partitions: [KafkaTopicPartition]) async {
        let revoked = Set(partitions)
        let waiting = state.withLock { $0.schedule.removeAll { revoked.contains($0.record.topicPartition) } }
        await handBack(waiting)
        // Sends in flight on these partitions finish and publish before the partitions go:
        // `finish` and `abandon` resume this wait once the partitions hold nothing.
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let drained = state.withLock { state in
                guard revoked.contains(where: { (state.progress[$0]?.held ?? 0) > 0 }) else { return true }
                state.drainWaiters.append((revoked, continuation))
                return false
            }
            if drained { continuation.resume() }
        }
        state.withLock { state in
            for partition in revoked { state.remove(partition) }
        }
        updateGauges()
    }

    func handBack(_ waiting: [Work]) async {
        guard !waiting.isEmpty else { return }
        state.withLock { state in
            for work in waiting { state.ledger.decided(work.message.messageId, final: false) }
        }
        let records = waiting.map { work in
            KafkaProducerRecord(topic: topics.handBack, key: work.record.key, value: work.record.value, headers: work.record.headers)
        }
        if await publish(records) {
            finish(waiting.map { Outcome(record: $0.record, events: [], tally: Tally(outcome: "handed_back")) })
            logger.info("Handed back records waiting for a retry", metadata: ["records": "\(waiting.count)"])
        } else {
            for work in waiting { abandon(work.record) }
        }
    }

    /// The record is done: its offset is stored once every earlier record of its partition is.
    func finish(_ record: KafkaConsumerRecord) {
        finish([Outcome(record: record, events: [], tally: nil)])
    }

    /// The records are done (their events stored): counted, and the offsets they complete
    /// stored with one call.
    func finish(_ outcomes: [Outcome]) {
        guard !outcomes.isEmpty else { return }
        let now = now()
        for outcome in outcomes {
            guard let tally = outcome.tally else { continue }
            metrics.count(tally.outcome, reason: tally.reason, failureType: tally.failureType)
            if tally.isFinal, let plannedAt = outcome.plannedAt {
                metrics.plannedToFinal.recordNanoseconds(Int64(max(0, now.timeIntervalSince(plannedAt)) * 1e9))
            }
        }
        let drained = state.withLock { state in
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
            return state.drainedWaiters()
        }
        for waiter in drained { waiter.resume() }
        held.release(outcomes.count)
        updateGauges()
    }

    /// The record stays unfinished (its offset is never stored by this instance); it no longer
    /// counts as held so that stopping and rebalancing do not wait for it.
    func abandon(_ record: KafkaConsumerRecord) {
        let drained = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.progress[record.topicPartition] != nil else { return [] }
            state.update(record.topicPartition) { $0.abandon() }
            return state.drainedWaiters()
        }
        for waiter in drained { waiter.resume() }
        held.release()
        updateGauges()
    }

    func updateGauges() {
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
