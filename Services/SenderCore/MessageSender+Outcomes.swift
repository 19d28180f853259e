import Foundation
import Kafka
import Logging
import PushEvents
import PushStore
import PushWire
import ServiceLifecycle
import Synchronization

/// What becomes of a record after its send: the events that say so, the retry record, and how
/// the outcome is counted.
extension MessageSender {
    /// What `push_sender_messages_total` counts once the outcome is stored.
    struct Tally: Sendable {
        var outcome: String
        var reason = ""
        var failureType = ""

        /// A final status (`MessageSent`, `MessageFailed`, `MessageExpired`, `MessageCancelled`),
        /// not a retry, a deferral, a hand-back or a skipped twin.
        var isFinal: Bool {
            switch outcome {
            case "sent", "failed", "expired", "cancelled": true
            default: false
            }
        }
    }

    /// What the provider's answer to `work`'s send makes of the message (a final status or a
    /// record written back), with the side effects the answer has on this instance: a spent quota
    /// counted, a refused credential suspended.
    func answered(_ outcome: SendOutcome, for work: Work) throws -> Outcome {
        let now = now()
        var suspendedUntil: Date?
        if case .credentialRejected(_, let credential) = outcome { suspendedUntil = suspensions.suspendedUntil(credential, now: now) }
        if case .retry(_, _, _, let quota?) = outcome { metrics.quotaExceeded(quota).increment() }
        var life = work.life
        let step = life.answered(outcome, control: controls.state(of: work.message.deliveryId), suspendedUntil: suspendedUntil, now: now, rules: rules)
        if let wait = life.throttleWait { metrics.throttled(wait) }
        if case .finish(.failed(let failure)) = step, let (credential, until) = failure.suspends {
            metrics.credentialErrors.increment()
            suspensions.suspend(credential, until: until)
            logger.error(
                "The provider refused the app's credentials; its messages wait while they are suspended",
                metadata: [
                    "app": "\(work.message.appId)", "delivery.id": "\(work.message.deliveryId)", "message.id": "\(work.message.messageId)",
                    "reason": "\(failure.reason)", "suspended.ms": "\(settings.credentialCooldownMilliseconds)",
                ])
        }
        return try self.outcome(of: step, for: work)
    }

    /// The records of a final status or of a message written back, and how it is counted.
    func outcome(of step: MessageLife.Step, for work: Work) throws -> Outcome {
        let message = work.message
        let now = now()
        let records: [KafkaProducerRecord]
        let tally: Tally
        switch step {
        case .finish(.sent(let providerMessageId)):
            let sent = MessageSent(message: message.reference, providerMessageId: providerMessageId, attempts: message.attempt, sentAt: now)
            (records, tally) = ([try result(sent, of: work)], Tally(outcome: "sent"))
        case .finish(.failed(let failure)):
            let reference = message.reference
            let failureType = failure.hard ? "hard" : "soft"
            let failed = MessageFailed(message: reference, failureType: failureType, reason: failure.reason, attempts: failure.attempts, failedAt: now)
            var events = [try result(failed, of: work)]
            if let invalidSince = failure.disabledSince {
                // The device by its token's digest (version 2): push.subscriptions is kept forever.
                let digest = reference.tokenDigest
                let disabled = SubscriptionDisabled(appId: message.appId, tokenDigest: digest, reason: failure.reason, invalidSince: invalidSince)
                let envelope = EventEnvelope(
                    key: TokenDigest.subscriptionKey(appId: message.appId, tokenDigest: digest), payload: disabled,
                    correlationId: message.deliveryId, causationId: work.metadata.id.lowercaseText
                )
                events.append(try KafkaProducerRecord(topic: topics.subscriptions, event: envelope))
            }
            (records, tally) = (events, Tally(outcome: "failed", reason: failure.reason, failureType: failureType))
        case .finish(.expired(let reason)):
            let expired = MessageExpired(message: message.reference, attempts: message.attempt - 1, expiredAt: now)
            (records, tally) = ([try result(expired, of: work)], Tally(outcome: "expired", reason: reason ?? ""))
        case .finish(.cancelled):
            let cancelled = MessageCancelled(message: message.reference, attempts: message.attempt - 1, cancelledAt: now)
            (records, tally) = ([try result(cancelled, of: work)], Tally(outcome: "cancelled"))
        case .requeue(let requeue):
            var next = message
            next.attempt = requeue.attempt
            next.notBefore = requeue.notBefore
            var record = try retryRecord(next, of: work, topic: requeue.throttleSlot == nil ? topics.retries : topics.throttled)
            if let slot = requeue.throttleSlot { record.headers.append(ThrottleHeader.header(slot)) }
            (records, tally) = ([record], Tally(outcome: requeue.retried ? "retried" : "deferred", reason: requeue.reason))
        case .skip, .hold, .takeSlot, .send:
            preconditionFailure("no outcome to publish for \(step)")
        }
        return Outcome(record: work.record, events: records, tally: tally, plannedAt: message.plannedAt)
    }

    func result(_ payload: some PushEvent, of work: Work) throws -> KafkaProducerRecord {
        let envelope = EventEnvelope(
            key: work.message.messageId.lowercaseText, payload: payload,
            correlationId: work.message.deliveryId, causationId: work.metadata.id.lowercaseText
        )
        return try KafkaProducerRecord(topic: topics.results, event: envelope)
    }

    /// `message` as a record of `topic` (the retry topic or the throttled one).
    func retryRecord(_ message: Message, of work: Work, topic: String) throws -> KafkaProducerRecord {
        let envelope = EventEnvelope(
            key: message.recordKey, payload: message,
            correlationId: message.deliveryId, causationId: work.metadata.id.lowercaseText
        )
        var record = try KafkaProducerRecord(topic: topic, event: envelope)
        record.headers += [
            KafkaHeader(name: "push-delivery-id", string: message.deliveryId),
            KafkaHeader(name: "push-message-id", string: message.messageId.lowercaseText),
        ]
        return record
    }
}
