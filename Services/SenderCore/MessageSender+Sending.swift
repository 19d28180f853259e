import Foundation
import Kafka
import Logging
import PushEvents
import PushStore
import ServiceLifecycle
import Synchronization

/// Sending and handing answers to the publisher: the only place where a transport's completion
/// callback meets the sender (docs/senders.md, "One concurrency style per layer").
extension MessageSender {
    /// Sends a record whose in-flight permit is taken. No task per message: the transport calls
    /// back with the outcome (usually on the connection's event loop), which only queues it for
    /// the publisher, so encoding the result events stays off the event loop.
    func send(_ work: Work) {
        sending.wrappingAdd(1, ordering: .relaxed)
        let started = ContinuousClock.now
        // Asked again just before the request is written: a send that waited for a stream while
        // its delivery was cancelled or paused is withdrawn instead of reaching the provider, and
        // so is one whose throttle slot went stale meanwhile (the first sends of a delivery wait
        // for the connection's TLS handshake: written together once it is up, they could reach
        // the provider faster than the rate). A stale slot's message takes a new slot.
        let deliveryId = work.message.deliveryId
        let life = work.life
        let stillWanted: @Sendable () -> Bool = { [controls, now] in
            life.stillWanted(control: controls.state(of: deliveryId), now: now())
        }
        transport.send(work.message, waiting: waitingSends, stillWanted: stillWanted) { [self] outcome in
            metrics.sendLatency.recordNanoseconds(Int64((ContinuousClock.now - started) / .nanoseconds(1)))
            let wake = waiting.withLock { waiting in
                waiting.finished.append(.sent(work, outcome))
                guard !waiting.publishing else { return false }
                waiting.publishing = true
                return true
            }
            if wake { wakeUp.yield() }
            sending.wrappingSubtract(1, ordering: .relaxed)
            // Last: stopping takes every in-flight permit back, then ends the wake-ups, so the
            // wake-up above is never lost.
            inFlight.release()
        }
    }

    /// Publishes the answers `send` queued, woken when they arrive while nobody publishes; ends
    /// once the sender stops and nothing is left.
    func runPublisher() async {
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
    func publishWaiting() async {
        while let batch = nextOutcomes() {
            await publish(batch)
        }
    }
}
