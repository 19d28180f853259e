import Foundation
import Kafka
import Logging
import PostgresNIO
import PushEvents
import PushStore
import ServiceLifecycle

/// Removes quarantined subscriptions once they have been disabled here for `purgeAfter` (counted
/// from `disabled_at`, when the channel disabled the device, not from the provider's possibly
/// much older `invalid_since`, which would purge a device at once), by
/// publishing `SubscriptionPurged` events (the projection deletes the rows), never by a silent
/// DELETE: the topic stays the source of truth and a replay gives the same table.
///
/// Runs every `interval`; several registration instances may run it at once (a purge is
/// idempotent).
package struct SubscriptionPurger: Service {
    let postgres: PostgresClient
    let producer: KafkaProducer
    let topic: String
    let purgeAfter: Duration
    let interval: Duration
    let logger: Logger

    package init(postgres: PostgresClient, producer: KafkaProducer, topic: String, purgeAfter: Duration, interval: Duration, logger: Logger) {
        self.postgres = postgres
        self.producer = producer
        self.topic = topic
        self.purgeAfter = purgeAfter
        self.interval = interval
        self.logger = logger
    }

    package func run() async throws {
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                // A round waiting for PostgreSQL or the broker must not hold up a stop; the
                // next round (after a restart) picks up what this one did not publish.
                let purged = try await cancelWhenGracefulShutdown { try await self.purgeOnce() }
                if purged > 0 { logger.info("Purged quarantined subscriptions", metadata: ["count": "\(purged)"]) }
            } catch {
                logger.warning("Purge of quarantined subscriptions failed; retrying next round", metadata: ["error": "\(String(reflecting: error))"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: interval) }
        }
    }

    /// One round: publishes a purge for up to 5000 subscriptions disabled before the cut-off.
    @discardableResult
    package func purgeOnce() async throws -> Int {
        let cutoff = Date().addingTimeInterval(-Double(purgeAfter.components.seconds))
        let rows = try await postgres.query(
            "SELECT app_id, token_digest FROM push.subscriptions WHERE disabled AND disabled_at < \(cutoff) ORDER BY disabled_at LIMIT 5000",
            logger: logger
        )
        var records: [KafkaProducerRecord] = []
        for try await (appId, digest) in rows.decode((UUID, String).self) {
            let key = TokenDigest.subscriptionKey(appId: appId, tokenDigest: digest)
            let event = EventEnvelope(key: key, payload: SubscriptionPurged(appId: appId, tokenDigest: digest))
            records.append(try KafkaProducerRecord(topic: topic, event: event))
        }
        for result in await producer.send(records) { _ = try result.get() }
        return records.count
    }
}
