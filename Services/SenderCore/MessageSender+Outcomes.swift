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

    /// The records that say what became of a message, and how it is counted.
    func consequences(of outcome: SendOutcome, for work: Work) throws -> ([KafkaProducerRecord], Tally) {
        let message = work.message
        let now = now()
        switch outcome {
        case .sent(let providerMessageId):
            let sent = MessageSent(message: message.reference, providerMessageId: providerMessageId, attempts: message.attempt, sentAt: now)
            return ([try result(sent, of: work)], Tally(outcome: "sent"))
        case .tokenInvalid(let reason, let invalidSince):
            let reference = message.reference
            let failed = MessageFailed(message: reference, failureType: "hard", reason: reason, attempts: message.attempt, failedAt: now)
            // The device by its token's digest (version 2): push.subscriptions is kept forever.
            let digest = reference.tokenDigest
            let disabled = SubscriptionDisabled(appId: message.appId, tokenDigest: digest, reason: reason, invalidSince: invalidSince ?? now)
            let envelope = EventEnvelope(
                key: TokenDigest.subscriptionKey(appId: message.appId, tokenDigest: digest), payload: disabled,
                correlationId: message.deliveryId, causationId: work.metadata.id.lowercaseText
            )
            return (
                [try result(failed, of: work), try KafkaProducerRecord(topic: topics.subscriptions, event: envelope)],
                Tally(outcome: "failed", reason: reason, failureType: "hard")
            )
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
            logger.error(
                "The provider refused the app's credentials; its messages wait while they are suspended",
                metadata: [
                    "app": "\(message.appId)", "delivery.id": "\(message.deliveryId)", "message.id": "\(message.reference.messageId)",
                    "reason": "\(reason)", "suspended.ms": "\(settings.credentialCooldownMilliseconds)",
                ])
            let failed = MessageFailed(message: message.reference, failureType: "soft", reason: reason, attempts: message.attempt, failedAt: now)
            return ([try result(failed, of: work)], Tally(outcome: "failed", reason: reason, failureType: "soft"))
        case .retry(let reason, let after, let atLeast, let quota):
            if let quota { metrics.quotaExceeded(quota).increment() }
            let delay = settings.retryPolicy.delay(afterAttempt: message.attempt, after: after, atLeast: atLeast)
            let due = now.addingTimeInterval(delay.seconds)
            guard due < message.validUntil else { return ([try expired(work, at: now)], Tally(outcome: "expired", reason: reason)) }
            var next = message
            next.attempt += 1
            next.notBefore = due
            return ([try retryRecord(next, of: work)], Tally(outcome: "retried", reason: reason))
        case .withdrawn:
            // The control that withdrew it decides; active again already (a resume in between):
            // sent again at once, without counting an attempt.
            if let controlled = try controlled(work, at: now) { return controlled }
            // Active: its throttle slot went stale while it waited for a stream (`send`). Read
            // back from the retry topic at once, where it takes a new slot.
            if let slot = work.slot, !ThrottleRate.usable(slot, now: now) {
                metrics.throttled(.late)
                return try consequences(of: .deferred(reason: "throttle-late", until: now), for: work)
            }
            return try consequences(of: .deferred(reason: "withdrawn", until: now), for: work)
        case .deferred(let reason, let until):
            guard until < message.validUntil else { return ([try expired(work, at: now)], Tally(outcome: "expired", reason: reason)) }
            var next = message
            next.notBefore = until
            return ([try retryRecord(next, of: work)], Tally(outcome: "deferred", reason: reason))
        }
    }

    /// What becomes of a message whose delivery an operator cancelled (`MessageCancelled`) or
    /// paused (set aside on the retry topic for `pauseRecheckMilliseconds`, or `expired` if its
    /// `validUntil` comes first); nil when its delivery is active.
    func controlled(_ work: Work, at now: Date) throws -> ([KafkaProducerRecord], Tally)? {
        switch controls.state(of: work.message.deliveryId) {
        case .active:
            return nil
        case .cancelled:
            let cancelled = MessageCancelled(message: work.message.reference, attempts: work.message.attempt - 1, cancelledAt: now)
            return ([try result(cancelled, of: work)], Tally(outcome: "cancelled"))
        case .paused:
            let until = now.addingTimeInterval(Double(settings.pauseRecheckMilliseconds) / 1000)
            return try consequences(of: .deferred(reason: "paused", until: until), for: work)
        }
    }

    func result(_ payload: some PushEvent, of work: Work) throws -> KafkaProducerRecord {
        let envelope = EventEnvelope(
            key: work.message.messageId.lowercaseText, payload: payload,
            correlationId: work.message.deliveryId, causationId: work.metadata.id.lowercaseText
        )
        return try KafkaProducerRecord(topic: topics.results, event: envelope)
    }

    func expired(_ work: Work, at now: Date) throws -> KafkaProducerRecord {
        try result(MessageExpired(message: work.message.reference, attempts: work.message.attempt - 1, expiredAt: now), of: work)
    }

    /// `message` as a record of the retry topic, or of `topic`.
    func retryRecord(_ message: Message, of work: Work, topic: String? = nil) throws -> KafkaProducerRecord {
        let envelope = EventEnvelope(
            key: message.recordKey, payload: message,
            correlationId: message.deliveryId, causationId: work.metadata.id.lowercaseText
        )
        var record = try KafkaProducerRecord(topic: topic ?? topics.retries, event: envelope)
        record.headers += [
            KafkaHeader(name: "push-delivery-id", string: message.deliveryId),
            KafkaHeader(name: "push-message-id", string: message.messageId.lowercaseText),
        ]
        return record
    }
}
