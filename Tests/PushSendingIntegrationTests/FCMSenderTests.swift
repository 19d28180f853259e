import Foundation
import ProviderSimulatorCore
import PushEvents
import PushPlanning
import PushStore
import PushTestSupport
import Synchronization
import Testing

/// The fcm-sender against the real broker, the real PostgreSQL and the FCM simulator over TLS
/// (OAuth token endpoint and HTTP v1 send): `FCMSenderHarness`.
@Suite("FCM sender", .serialized)
struct FCMSenderTests {
    @Test("each FCM error code leads to its documented action; data and notification messages arrive with _mId")
    func outcomes() async throws {
        try await FCMSenderHarness.with { h in
            let data = h.message(token: "token-data-\(UUID())")
            let notification = h.message(token: "token-notif-\(UUID())", notification: true)
            let cases: [(FCMMessagePlanned, type: String, failureType: String?, reason: String?)] = [
                (h.message(token: "unreg-\(UUID())"), "MessageFailed", "hard", "UNREGISTERED"),
                (h.message(token: "mismatch-\(UUID())"), "MessageFailed", "hard", "SENDER_ID_MISMATCH"),
                (h.message(token: "invalid-\(UUID())"), "MessageFailed", "hard", "INVALID_ARGUMENT"),
                (h.message(token: "thirdparty-\(UUID())"), "MessageFailed", "soft", "THIRD_PARTY_AUTH_ERROR"),
                // (A project's QUOTA_EXCEEDED pauses the project for at least 60 s: `quotaPause` below;
                // a device's delays that message only: `deviceQuota`.)
                (h.message(token: "internal-\(UUID())", validFor: 20), "MessageExpired", nil, nil),
            ]
            try await h.publish([data, notification] + cases.map(\.0))
            let results = try await h.withSender { try await h.waitForResults(2 + cases.count).byMessageId }
            for sent in [data, notification] {
                let result = try #require(results[sent.messageId.uuidString.lowercased()])
                #expect(result.type == "MessageSent")
                #expect(result.providerMessageId?.hasPrefix("projects/\(FCMSenderHarness.project)/messages/") == true)
                #expect(h.simulator.state.notifications(mId: sent.messageId.uuidString.lowercased()).count == 1)
            }
            for (message, type, failureType, reason) in cases {
                let result = try #require(results[message.messageId.uuidString.lowercased()], "no result for \(message.registrationToken)")
                #expect(result.type == type, "\(message.registrationToken)")
                if let failureType { #expect(result.failureType == failureType, "\(message.registrationToken)") }
                if let reason { #expect(result.reason == reason, "\(message.registrationToken)") }
            }
            // Hard failures quarantine the token (SubscriptionDisabled version 2, the device by
            // digest, no token in the record); the others do not.
            let quarantines = try await h.records(h.topics.subscriptions.name)
            let disabled = try quarantines.compactMap { record -> String? in
                let object = try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any]
                return (object?["data"] as? [String: Any])?["tokenDigest"] as? String
            }
            #expect(Set(disabled) == Set(cases.filter { $0.failureType == "hard" }.map { TokenDigest.of($0.0.registrationToken) }))
            for record in quarantines {
                for (message, _, _, _) in cases {
                    #expect(!String(decoding: (record.key ?? []) + record.value, as: UTF8.self).contains(message.registrationToken))
                }
            }
            // The results (version 2) name each device by its token's digest, never by its token.
            let resultRecords = try await h.records(h.topics.messageResults.name)
            #expect(resultRecords.count >= 2 + cases.count)
            for message in [data, notification] + cases.map(\.0) {
                let bytes = resultRecords.filter { $0.key == Array(message.messageId.uuidString.lowercased().utf8) }
                    .map { String(decoding: $0.value, as: UTF8.self) }
                #expect(!bytes.isEmpty && bytes.allSatisfy { $0.contains(TokenDigest.of(message.registrationToken)) && $0.contains(#""version":2"#) })
                #expect(!bytes.contains { $0.contains(message.registrationToken) }, "the results name \(message.registrationToken)")
            }
            // The internal error was tried more than once before expiring.
            #expect(h.simulator.state.counters.byReason["INTERNAL", default: 0] >= 2)
        }
    }

    @Test(
        "sealed records (version 2): opened with the subject's key and sent, retried with the same box; a subject whose key is gone fails soft as erased, unsent; no byte of the message, retry or result topics names a token"
    )
    func sealedRecords() async throws {
        try await FCMSenderHarness.with { h in
            // Two subjects' data keys, as the registration service creates them.
            let (kept, erased) = (UUID(), UUID())
            let keys = [kept: SubjectKeys.freshKey(), erased: SubjectKeys.freshKey()]
            for (id, key) in keys {
                try await h.postgres.query(
                    """
                    INSERT INTO push.subject_keys (subject_id, service_id, subject, data_key)
                    VALUES (\(id), gen_random_uuid(), \("user:sealed-\(id)"), decode(\(key.map { String(format: "%02x", $0) }.joined()), 'hex'))
                    """, logger: h.logger)
            }
            let sent = try h.message(token: "sealed-ok-\(UUID())").sealed(subjectId: kept, key: keys[kept]!)
            let retried = try h.message(token: "internal-\(UUID())", validFor: 20).sealed(subjectId: kept, key: keys[kept]!)
            let forgotten = try h.message(token: "sealed-erased-\(UUID())").sealed(subjectId: erased, key: keys[erased]!)
            let tokens = [sent, retried, forgotten].map(\.registrationToken)
            // The erasure: the subject's key deleted before the sender reads its record.
            try await h.postgres.query("DELETE FROM push.subject_keys WHERE subject_id = \(erased)", logger: h.logger)
            try await h.publish([sent, retried, forgotten])

            let results = try await h.withSender { try await h.waitForResults(3).byMessageId }
            let id = { (message: FCMMessagePlanned) in message.messageId.uuidString.lowercased() }
            #expect(results[id(sent)]?.type == "MessageSent")
            #expect(h.simulator.state.notifications(mId: id(sent)).count == 1)
            #expect(results[id(retried)]?.type == "MessageExpired")
            #expect(h.simulator.state.counters.byReason["INTERNAL", default: 0] >= 2, "the retry record's box opened again")
            #expect(results[id(forgotten)].map { [$0.type, $0.failureType, $0.reason] } == ["MessageFailed", "soft", "erased"])
            #expect(h.simulator.state.notifications(mId: id(forgotten)).isEmpty)

            // Every record the three messages produced, keys and values: no token in clear.
            var scanned = 0
            for topic in [h.messageTopic, h.retryTopic, h.topics.messageResults] {
                for record in try await h.records(topic.name) {
                    let bytes = String(decoding: (record.key ?? []) + record.value, as: UTF8.self)
                    for token in tokens { #expect(!bytes.contains(token), "\(topic.name) names \(token)") }
                    scanned += 1
                }
            }
            #expect(scanned >= 3 + 2 + 3, "the messages, at least two retry records and the results")
        }
    }

    @Test("the planner's notification message with every Android option passes FCM's checks (the simulator's) and arrives with its _mId")
    func plannerOptions() async throws {
        try await FCMSenderHarness.with { h in
            let app = PlanningApp(
                appId: h.appId, integrationKey: "android", platform: .android, environment: "production", bundleId: nil,
                fcmProjectId: FCMSenderHarness.project, variables: [], credential: nil)
            let content = DeliveryRequest.Content(
                title: "Gate changed", subtitle: "TP 1234", body: "Boarding at B12",
                android: .init(
                    mode: "notification", channelId: "flights", image: "https://example.com/b12.png", icon: "ic_flight", color: "#0a6ebd", sound: "default",
                    tag: "gate", clickAction: "OPEN_FLIGHT"))
            guard case .fcm(let message) = try PlannerBuiltMessages.message(app: app, token: "token-options-\(UUID())", content: content, broadLogId: 731)
            else {
                Issue.record("not an FCM message")
                return
            }
            try await h.publish([message])
            let results = try await h.withSender { try await h.waitForResults(1).byMessageId }
            #expect(results[message.messageId.uuidString.lowercased()]?.type == "MessageSent")
            #expect(h.simulator.state.notifications(mId: "731").count == 1)

            // The referee is strict: FCM refuses what it does not know.
            var object = try #require(try JSONSerialization.jsonObject(with: Data(message.message.utf8)) as? [String: Any])
            var android = try #require(object["android"] as? [String: Any])
            var notification = try #require(android["notification"] as? [String: Any])
            notification["color"] = "blue"
            android["notification"] = notification
            object["android"] = android
            guard case .failure(let error) = FCMMessageValidator.validate(object) else {
                Issue.record("a color that is not #rrggbb passes")
                return
            }
            #expect(error.message.contains("message.android.notification.color"))
            notification["color"] = "#0a6ebd"
            notification["clickAction2"] = "x"
            android["notification"] = notification
            object["android"] = android
            guard case .failure(let unknown) = FCMMessageValidator.validate(object) else {
                Issue.record("an unknown android.notification field passes")
                return
            }
            #expect(unknown.message.contains(#"Unknown name "clickAction2""#))
        }
    }

    @Test(
        "a device's QUOTA_EXCEEDED delays that device's message only: the project's other devices are sent at once, the device's message after its back-off"
    )
    func deviceQuota() async throws {
        try await FCMSenderHarness.with { h in
            let busy = h.message(token: FCMSenderHarness.token())
            _ = h.simulator.state.updateFaults { $0.deviceQuota = [busy.registrationToken: 2] }
            let others = (0..<20).map { _ in h.message(token: FCMSenderHarness.token()) }
            try await h.publish([busy] + others)

            // The real fcm-sender executable, so its /metrics can be read.
            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort)
            defer { sender.killIfRunning() }
            // Well inside the 60 s a project pause would hold every message of the project.
            let results = try await h.waitForResults(1 + others.count, within: .seconds(40)).byMessageId
            for message in others {
                let id = message.messageId.uuidString.lowercased()
                #expect(results[id]?.type == "MessageSent")
                #expect(results[id]?.attempts == 1, "another device of the project waited")
                #expect(h.simulator.state.notifications(mId: id).count == 1)
            }
            // The busy device's message was refused twice, backed off on the retry topic, then sent.
            let id = busy.messageId.uuidString.lowercased()
            #expect(results[id]?.type == "MessageSent")
            #expect(results[id]?.attempts == 3)
            #expect(h.simulator.state.notifications(mId: id).count == 1)
            #expect(h.simulator.state.counters.byReason["QUOTA_EXCEEDED", default: 0] == 2)
            let retries = try await h.records(h.topics.fcmRetries.name)
            #expect(retries.count == 2, "only the busy device's message went to the retry topic")

            #expect(try await h.metric("push_sender_quota_exceeded_total", labels: [#"scope="device""#], opsPort: opsPort) == 2)
            #expect(try await h.metric("push_sender_quota_exceeded_total", labels: [#"scope="project""#], opsPort: opsPort) ?? 0 == 0)
            #expect(try await h.metric("push_sender_messages_total", labels: [#"outcome="deferred""#], opsPort: opsPort) == nil, "nothing was deferred")
            await sender.terminate()
            #expect(sender.terminationStatus == 0, "\(sender.logTail())")
        }
    }

    @Test(
        "the executable's /metrics: outcomes by reason and failure type, and each message's time from its planning to its final status"
    )
    func outcomeMetrics() async throws {
        try await FCMSenderHarness.with { h in
            // Planned 100 s before this test publishes them (a backlog, as after an outage).
            let plannedAt = Date().addingTimeInterval(-100)
            func planned(_ token: String) -> FCMMessagePlanned {
                var message = h.message(token: token)
                message.plannedAt = plannedAt
                return message
            }
            let sent = (0..<3).map { _ in planned(FCMSenderHarness.token()) }
            let unregistered = (0..<2).map { _ in planned("unreg-\(UUID())") }
            let thirdParty = planned("thirdparty-\(UUID())")
            try await h.publish(sent + unregistered + [thirdParty])

            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort)
            defer { sender.killIfRunning() }
            _ = try await h.waitForResults(6, within: .seconds(40))
            // Counted once their events are stored: read until the last one is.
            try await eventually(within: .seconds(10), "every outcome counted") {
                try await h.metric("push_sender_planned_to_final_seconds_count", labels: [#"lane="bulk""#], opsPort: opsPort) == 6
            }
            let failed = #"outcome="failed""#
            #expect(try await h.metric("push_sender_messages_total", labels: [#"outcome="sent""#], opsPort: opsPort) == 3)
            #expect(
                try await h.metric("push_sender_messages_total", labels: [failed, #"reason="UNREGISTERED""#, #"failure_type="hard""#], opsPort: opsPort) == 2)
            #expect(
                try await h.metric(
                    "push_sender_messages_total", labels: [failed, #"reason="THIRD_PARTY_AUTH_ERROR""#, #"failure_type="soft""#], opsPort: opsPort) == 1)
            #expect(try await h.metric("push_sender_messages_total", labels: [failed], opsPort: opsPort) == 3, "no other failure")
            // From `plannedAt`, not from when the sender read them: six messages of about 100 s.
            let seconds = try #require(try await h.metric("push_sender_planned_to_final_seconds_sum", labels: [#"lane="bulk""#], opsPort: opsPort))
            #expect(seconds >= 600 && seconds < 600 + 6 * 60, "push_sender_planned_to_final_seconds_sum \(seconds)")
            await sender.terminate()
            #expect(sender.terminationStatus == 0, "\(sender.logTail())")
        }
    }

    @Test("a project's QUOTA_EXCEEDED pauses the project for 60 s: its messages wait on the retry topic, not in flight, then are sent once each")
    func quotaPause() async throws {
        let clock = ShiftedClock()
        try await FCMSenderHarness.with { h in
            try await h.withSender(now: clock.now) {
                _ = h.simulator.state.updateFaults { $0.burst429 = 1 }
                let first = h.message(token: "token-first-\(UUID())")
                try await h.publish([first])
                try await eventually("the first send meets the quota") { h.simulator.state.counters.byReason["QUOTA_EXCEEDED", default: 0] == 1 }

                // While the project is paused, its messages are deferred to the retry topic without
                // a request to FCM, and the instance's in-flight slots stay free.
                let rest = (0..<20).map { _ in h.message(token: "token-\(UUID())") }
                try await h.publish(rest)
                try await eventually("every message waits on the retry topic") {
                    try await h.records(h.topics.fcmRetries.name).count >= 1 + rest.count
                }
                #expect(h.simulator.state.notifications().isEmpty, "nothing reaches FCM while the project is paused")
                #expect(h.simulator.state.counters.byReason["QUOTA_EXCEEDED", default: 0] == 1)
                #expect(try await h.records(h.topics.messageResults.name).isEmpty)

                // The pause ends (60 s, the floor for QUOTA_EXCEEDED): each message is sent once.
                clock.advance(by: 61)
                let results = try await h.waitForResults(1 + rest.count).byMessageId
                for message in [first] + rest {
                    let id = message.messageId.uuidString.lowercased()
                    #expect(results[id]?.type == "MessageSent")
                    #expect(h.simulator.state.notifications(mId: id).count == 1)
                }
                // The refused send counts as an attempt; the deferred ones do not.
                #expect(results[first.messageId.uuidString.lowercased()]?.attempts == 2)
                #expect(rest.allSatisfy { results[$0.messageId.uuidString.lowercased()]?.attempts == 1 })
            }
        }
    }

    @Test("messages queued for a deleted app fail soft as app-deleted, nothing reaches FCM")
    func deletedApp() async throws {
        try await FCMSenderHarness.with { h in
            let queued = (0..<3).map { _ in h.message(token: "token-\(UUID())") }
            try await h.deleteApp(h.appId)
            try await h.publish(queued)
            let results = try await h.withSender { try await h.waitForResults(queued.count).byMessageId }
            for message in queued {
                let result = try #require(results[message.messageId.uuidString.lowercased()])
                #expect(result.type == "MessageFailed")
                #expect(result.failureType == "soft")
                #expect(result.reason == "app-deleted")
            }
            #expect(h.delivered == 0)
        }
    }
}
