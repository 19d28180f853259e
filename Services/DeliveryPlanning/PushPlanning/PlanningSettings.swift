import Foundation
import Kafka
import PushRuntime

/// The planner's settings (`PLANNER_*`, docs/configuration.md).
package struct PlanningSettings: Sendable, Hashable {
    /// Subscriptions read and messages published per step of a fan-out (`PLANNER_CHUNK_SIZE`).
    package var chunkSize: Int = 5000
    /// The first retry delay after a failed fan-out pass, doubling up to 10 s
    /// (`PLANNER_POLL_INTERVAL_MS`; the name is older than the signals: nothing polls at this
    /// interval any more).
    package var pollIntervalMilliseconds: Int = 500
    /// The longest the fan-out and the outbox publisher wait for a signal before looking for
    /// work anyway (`PLANNER_IDLE_WAIT_MS`): the backstop for work no signal of this process
    /// announces (rows or plans left by another instance or a previous process).
    package var idleWaitMilliseconds: Int = 5000
    /// How often the message topics' end offsets are re-read during a fan-out
    /// (`PLANNER_RECOVERY_MARK_INTERVAL_MS`): after a crash, at most this much of the topics is
    /// read back to find what was already published.
    package var recoveryMarkIntervalMilliseconds: Int = 10_000
    /// Subscriptions per shard of a delivery (`PLANNER_SHARD_SIZE`): a delivery whose apps hold
    /// more is cut into key ranges of this many that planner instances plan side by side; one
    /// with at most this many (or throttled) is one shard (docs/planning.md, "Shards").
    package var shardSize: Int = 50_000
    /// Shards of a delivery one instance plans side by side (`PLANNER_PARALLEL_SHARDS`), each
    /// turn on its own PostgreSQL connection: one alone spends most of its time waiting for the
    /// database and the broker (docs/planning.md, "Shards").
    package var parallelShards: Int = 4
    /// Where the deliveries' admin API listens (`PLANNER_ADMIN_HOST`, `PLANNER_ADMIN_PORT`).
    package var adminHost: String = "0.0.0.0"
    package var adminPort: Int = 8082
    /// The consumer groups whose lag this service exports from their committed offsets
    /// (`push_consumer_group_lag`, also while a group has no member): `PLANNER_WATCHED_GROUPS`,
    /// `group:topic,topic;group:topic`. Nil: every group of the channel under its default name
    /// (`PlanningApplication.watchedGroups`); empty: none.
    package var watchedGroups: [KafkaGroupLag.Group]?
    /// How often they are read (`PLANNER_GROUP_LAG_INTERVAL_MS`).
    package var groupLagIntervalMilliseconds: Int = 15_000

    package init() {}

    /// `group:topic,topic;group:topic` as (group, topics); a malformed entry is named.
    package static func groups(_ text: String) throws(ConfigurationError) -> [KafkaGroupLag.Group] {
        var groups: [KafkaGroupLag.Group] = []
        for entry in text.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) where !entry.isEmpty {
            let parts = entry.split(separator: ":", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            let topics = parts.count == 2 ? parts[1].split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } : []
            guard parts.count == 2, !parts[0].isEmpty, !topics.isEmpty else {
                throw ConfigurationError("PLANNER_WATCHED_GROUPS: \"\(entry)\" is not group:topic[,topic...]")
            }
            groups.append(KafkaGroupLag.Group(name: parts[0], topics: topics))
        }
        return groups
    }

    package init(environment: EnvironmentSettings) throws {
        chunkSize = try environment.int("PLANNER_CHUNK_SIZE", default: chunkSize, in: 1...100_000)
        pollIntervalMilliseconds = try environment.int("PLANNER_POLL_INTERVAL_MS", default: pollIntervalMilliseconds, in: 10...60_000)
        idleWaitMilliseconds = try environment.int("PLANNER_IDLE_WAIT_MS", default: idleWaitMilliseconds, in: 100...600_000)
        recoveryMarkIntervalMilliseconds = try environment.int(
            "PLANNER_RECOVERY_MARK_INTERVAL_MS", default: recoveryMarkIntervalMilliseconds, in: 100...600_000)
        shardSize = try environment.int("PLANNER_SHARD_SIZE", default: shardSize, in: 100...100_000_000)
        parallelShards = try environment.int("PLANNER_PARALLEL_SHARDS", default: parallelShards, in: 1...64)
        adminHost = environment.string("PLANNER_ADMIN_HOST", default: adminHost)
        adminPort = try environment.int("PLANNER_ADMIN_PORT", default: adminPort, in: 0...65_535)
        if let watched = environment.values["PLANNER_WATCHED_GROUPS"] { watchedGroups = try Self.groups(watched) }
        groupLagIntervalMilliseconds = try environment.int("PLANNER_GROUP_LAG_INTERVAL_MS", default: groupLagIntervalMilliseconds, in: 1_000...3_600_000)
    }
}
