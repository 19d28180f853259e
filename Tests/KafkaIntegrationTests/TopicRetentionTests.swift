import Foundation
import Kafka
import PushTestSupport
import Testing

/// `pushctl topics create` and `pushctl topics apply-retention` against the real broker, on a
/// catalog renamed for this test (`PUSH_TOPIC_<ID>`): the retention docs/events.md documents is
/// what the broker reports (DescribeConfigs), and an existing topic is brought to it
/// (IncrementalAlterConfigs).
@Suite("Topic retention applied by pushctl topics", .serialized)
struct TopicRetentionTests {
    static let day: Int64 = 24 * 3600 * 1000
    static let ids = [
        "SUBSCRIPTIONS", "CATALOG", "DELIVERY_REQUESTS", "DELIVERY_REQUESTS_DLQ", "DELIVERY_EVENTS", "APNS_MESSAGES", "FCM_MESSAGES", "APNS_RETRIES",
        "FCM_RETRIES", "APNS_TRANSACTIONAL_MESSAGES", "FCM_TRANSACTIONAL_MESSAGES", "APNS_TRANSACTIONAL_RETRIES", "FCM_TRANSACTIONAL_RETRIES",
        "APNS_THROTTLED", "FCM_THROTTLED", "MESSAGE_RESULTS", "TRACKING",
    ]

    @Test("created with the documented retention.ms; an older topic's retention is changed once, then left alone")
    func retention() async throws {
        let suffix = UUID().uuidString.prefix(8).lowercased()
        func name(_ id: String) -> String { "test.\(id.lowercased()).\(suffix)" }
        var environment = TestStack.environment
        for id in Self.ids {
            environment["PUSH_TOPIC_\(id)"] = name(id)
            environment["PUSH_TOPIC_\(id)_PARTITIONS"] = "1"
        }
        environment["PUSH_RESULTS_RETENTION_DAYS"] = "90"
        environment["PUSH_TRACKING_RETENTION_DAYS"] = "45"

        // A deployment from before retention was applied: its retry topic kept records 7 days.
        let admin = try KafkaAdmin(configuration: try KafkaTestSupport.client(), logger: KafkaTestSupport.logger)
        _ = try await admin.createTopics([KafkaTopicSpecification(name: name("APNS_RETRIES"), partitions: 1, config: ["retention.ms": String(7 * Self.day)])])

        let create = try await BuiltExecutable.run("pushctl", arguments: ["topics", "create"], environment: environment)
        #expect(create.status == 0, "\(create.output)")
        #expect(create.output.contains("created  \(name("APNS_MESSAGES")) (1 partitions, retention 35 days)"), "\(create.output)")
        #expect(create.output.contains("exists   \(name("APNS_RETRIES"))"), "\(create.output)")

        let expected: [String: Int64] = [
            name("SUBSCRIPTIONS"): -1, name("CATALOG"): -1, name("DELIVERY_REQUESTS"): 35 * Self.day, name("DELIVERY_EVENTS"): -1,
            name("DELIVERY_REQUESTS_DLQ"): 30 * Self.day, "\(name("SUBSCRIPTIONS")).dlq": 30 * Self.day, "\(name("TRACKING")).dlq": 30 * Self.day,
            name("APNS_MESSAGES"): 35 * Self.day, name("FCM_MESSAGES"): 35 * Self.day, name("FCM_RETRIES"): 35 * Self.day,
            name("MESSAGE_RESULTS"): 90 * Self.day, name("TRACKING"): 45 * Self.day,
            name("FCM_TRANSACTIONAL_MESSAGES"): 35 * Self.day, name("APNS_TRANSACTIONAL_RETRIES"): 35 * Self.day,
            name("FCM_THROTTLED"): 35 * Self.day,
        ]
        var reported = try await admin.topicConfigs(Array(expected.keys) + [name("APNS_RETRIES")])
        for (topic, retention) in expected {
            #expect(reported[topic]?["retention.ms"] == String(retention), "\(topic): \(reported[topic] ?? [:])")
        }
        #expect(reported[name("APNS_RETRIES")]?["retention.ms"] == String(7 * Self.day), "create leaves an existing topic as it is")

        let dryRun = try await BuiltExecutable.run("pushctl", arguments: ["topics", "apply-retention", "--dry-run"], environment: environment)
        #expect(dryRun.output.contains("would set \(name("APNS_RETRIES")): retention 7 days -> retention 35 days"), "\(dryRun.output)")
        #expect(try await admin.topicConfigs([name("APNS_RETRIES")])[name("APNS_RETRIES")]?["retention.ms"] == String(7 * Self.day))

        let apply = try await BuiltExecutable.run("pushctl", arguments: ["topics", "apply-retention"], environment: environment)
        #expect(apply.status == 0, "\(apply.output)")
        #expect(
            apply.output.contains("set       \(name("APNS_RETRIES")): retention 7 days -> retention 35 days (retention.ms=\(35 * Self.day))"), "\(apply.output)"
        )
        #expect(apply.output.contains("unchanged \(name("TRACKING")) (retention 45 days)"), "\(apply.output)")
        #expect(apply.output.contains("1 of 34 topics changed"), "\(apply.output)")
        reported = try await admin.topicConfigs([name("APNS_RETRIES")])
        #expect(reported[name("APNS_RETRIES")]?["retention.ms"] == String(35 * Self.day))

        let again = try await BuiltExecutable.run("pushctl", arguments: ["topics", "apply-retention"], environment: environment)
        #expect(again.status == 0 && again.output.contains("0 of 34 topics changed"), "\(again.output)")
        await admin.close()
    }
}
