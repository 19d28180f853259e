import Foundation
import Kafka
import PostgresNIO
import PushEvents
import PushRegistration
import PushTestSupport
import Testing

/// `SubscriptionPurger`: a quarantined device is purged once it has been disabled here for the
/// purge delay, counted from when the channel disabled it, not from the provider's invalidation
/// time (APNs reports when the token stopped being valid, which may be months back).
///
/// In a database of its own: a purge covers every quarantined device of the deployment, and in
/// the shared database its one-second delay purged the quarantined devices of tests running in
/// the other processes (an erasure test then found no such person: 404).
@Suite("Quarantine purge counts from when the channel disabled the device", .serialized)
struct QuarantinePurgeTests {
    static func purge(_ h: RegistrationHarness, after delay: Duration) async throws {
        let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
        let purger = SubscriptionPurger(
            postgres: h.postgres, producer: producer, topic: h.configuration.topics.subscriptions.name, purgeAfter: delay, interval: .seconds(3600),
            logger: h.logger)
        try await purger.purgeOnce()
        await producer.close()
    }

    @Test("a token APNs declared invalid 90 days ago survives a 30-day purge; disabled_at is when it was disabled here, invalid_since the provider's time")
    func countsFromDisabledHere() async throws {
        let database = try ScratchDatabase.create(prefix: "push_test_purge")
        defer { database.drop() }
        try await RegistrationHarness.migrate(database)
        try await RegistrationHarness.run(environment: ["POSTGRES_URL": database.url]) { h in
            let (appId, _) = try await h.defineApp(platform: .ios)
            let token = String(repeating: "ab", count: 32)
            let day: TimeInterval = 86_400
            try await h.publishRegistration(appId: appId, token: token, registeredAt: Date().addingTimeInterval(-120 * day))
            try await eventually("registered") { try await h.subscription(appId: appId, token: token) != nil }
            let invalidSince = Date().addingTimeInterval(-90 * day)
            try await h.disable(appId: appId, token: token, reason: "Unregistered", invalidSince: invalidSince)
            try await eventually("disabled") { try await h.subscription(appId: appId, token: token)?["disabled"] == "true" }

            let rows = try await h.postgres.query(
                """
                SELECT EXTRACT(EPOCH FROM now() - disabled_at)::float8, EXTRACT(EPOCH FROM invalid_since)::float8
                FROM push.subscriptions WHERE app_id = \(appId) AND registration_token = \(token)
                """,
                logger: h.logger)
            for try await (age, invalid) in rows.decode((Double, Double).self) {
                #expect(age < 120, "disabled_at is the time of the quarantine event, \(age) s ago")
                #expect(abs(invalid - invalidSince.timeIntervalSince1970) < 1, "invalid_since keeps the provider's time")
            }

            try await Self.purge(h, after: .seconds(30 * 86_400))
            try await Task.sleep(for: .seconds(2))
            #expect(try await h.subscription(appId: appId, token: token) != nil, "not purged: disabled here seconds ago, not 90 days ago")

            try await Self.purge(h, after: .seconds(1))
            try await eventually("purged once disabled for longer than the delay") { try await h.subscription(appId: appId, token: token) == nil }
        }
    }
}
