import Kafka
import PushEvents
import PushPlanning
import PushRuntime
import Testing

/// `PLANNER_WATCHED_GROUPS` and the default list of watched groups.
@Suite("Planner settings: the groups whose lag it exports")
struct PlanningSettingsTests {
    @Test("unset: every group of the channel by default; a list replaces it; empty turns it off; a malformed entry is named")
    func watchedGroups() throws {
        #expect(try PlanningSettings(environment: EnvironmentSettings([:])).watchedGroups == nil)
        let listed = try PlanningSettings(
            environment: EnvironmentSettings(["PLANNER_WATCHED_GROUPS": "a:t1, t2 ; b:t3", "PLANNER_GROUP_LAG_INTERVAL_MS": "2000"]))
        #expect(listed.watchedGroups == [KafkaGroupLag.Group(name: "a", topics: ["t1", "t2"]), KafkaGroupLag.Group(name: "b", topics: ["t3"])])
        #expect(listed.groupLagIntervalMilliseconds == 2_000)
        #expect(try PlanningSettings(environment: EnvironmentSettings(["PLANNER_WATCHED_GROUPS": ""])).watchedGroups == [])
        #expect(throws: ConfigurationError.self) {
            try PlanningSettings(environment: EnvironmentSettings(["PLANNER_WATCHED_GROUPS": "a:t1;b"]))
        }
        do {
            _ = try PlanningSettings(environment: EnvironmentSettings(["PLANNER_WATCHED_GROUPS": "a:"]))
            Issue.record("a group without topics was accepted")
        } catch {
            #expect("\(error)".contains("\"a:\" is not group:topic"))
        }

        let defaults = PlanningApplication.watchedGroups(topics: TopicCatalog(), groups: PlanningApplication.GroupNames())
        #expect(
            defaults.map(\.name) == [
                "push-delivery-planner", "push-deliveries-projection", "push-broad-log-projection", "push-catalog-projection",
                "push-subscriptions-projection", "push-tracking-log-projection", "push-apns-sender", "push-apns-sender.transactional",
                "push-apns-sender.throttled", "push-fcm-sender", "push-fcm-sender.transactional", "push-fcm-sender.throttled",
            ])
        #expect(defaults.first { $0.name == "push-apns-sender" }?.topics == ["push.apns.messages", "push.apns.retries"])
    }
}
