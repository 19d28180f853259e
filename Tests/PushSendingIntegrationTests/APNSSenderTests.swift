import Crypto
import Foundation
import Kafka
import ProviderSimulatorCore
import PushEvents
import PushPlanning
import PushSending
import PushTestSupport
import Testing

/// The apns-sender against the real broker, the real PostgreSQL and the APNs simulator over TLS.
@Suite("APNs sender", .serialized)
struct APNSSenderTests {
    @Test("each APNs answer leads to its documented outcome; a bad record goes to the DLQ and sending goes on")
    func outcomes() async throws {
        try await APNSSenderHarness.with { h in
            let good = (0..<3).map { _ in h.message(token: APNSSenderHarness.token()) }
            let unregistered = h.message(token: APNSSenderHarness.token(prefix: "dead"))
            let badToken = h.message(token: APNSSenderHarness.token(prefix: "bad0"))
            let badCollapse = h.message(token: APNSSenderHarness.token(), collapseId: String(repeating: "c", count: 65))
            let expired = h.message(token: APNSSenderHarness.token(), validFor: -1)
            try await h.publishRaw("this is not an event")
            try await h.publish(good + [unregistered, badToken, badCollapse, expired])

            let results = try await h.withSender {
                try await h.waitForResults(7)
            }
            let byId = Dictionary(results.map { ($0.messageId, $0) }, uniquingKeysWith: { first, _ in first })
            #expect(results.count == 7)
            for message in good {
                let result = try #require(byId[message.messageId.uuidString.lowercased()])
                #expect(result.type == "MessageSent")
                #expect(result.providerMessageId == message.messageId.uuidString.lowercased())
                #expect(h.simulator.state.notifications(token: message.registrationToken).count == 1)
            }
            for (message, reason) in [(unregistered, "Unregistered"), (badToken, "BadDeviceToken")] {
                let result = try #require(byId[message.messageId.uuidString.lowercased()])
                #expect(result.type == "MessageFailed")
                #expect(result.failureType == "hard")
                #expect(result.reason == reason)
            }
            let collapse = try #require(byId[badCollapse.messageId.uuidString.lowercased()])
            #expect(collapse.type == "MessageFailed")
            #expect(collapse.failureType == "soft")
            #expect(collapse.reason == "BadCollapseId")
            #expect(byId[expired.messageId.uuidString.lowercased()]?.type == "MessageExpired")
            #expect(h.simulator.state.notifications(token: expired.registrationToken).isEmpty)

            // Quarantine: one SubscriptionDisabled (version 2) per dead token, with the APNs
            // timestamp for 410, naming the device by digest: the token is in no byte of the record.
            let quarantines = try await h.records(h.topics.subscriptions.name)
            for record in quarantines {
                for token in [unregistered.registrationToken, badToken.registrationToken] {
                    #expect(!String(decoding: (record.key ?? []) + record.value, as: UTF8.self).contains(token))
                }
            }
            let disabled = try quarantines.compactMap { record -> [String: Any]? in
                let object = try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any]
                return object?["type"] as? String == "SubscriptionDisabled" && object?["version"] as? Int == 2 ? object?["data"] as? [String: Any] : nil
            }
            #expect(
                Set(disabled.compactMap { $0["tokenDigest"] as? String })
                    == [TokenDigest.of(unregistered.registrationToken), TokenDigest.of(badToken.registrationToken)])
            #expect(Set(disabled.compactMap { $0["reason"] as? String }) == ["Unregistered", "BadDeviceToken"])

            let dlq = try await h.records("\(h.topics.apnsMessages.name).dlq")
            #expect(dlq.count == 1)
            #expect(
                dlq.first?.headers.contains { $0.name == "dlq.reason" && String(decoding: $0.value ?? [], as: UTF8.self).contains("malformed_envelope") }
                    == true)
        }
    }

    @Test("the planner's critical-alert sound, badge-only and sound-only notifications are accepted by APNs (the simulator) and arrive with their _mId")
    func plannerOptions() async throws {
        try await APNSSenderHarness.with { h in
            let app = PlanningApp(
                appId: h.appId, integrationKey: "ios", platform: .ios, environment: "production", bundleId: APNSSenderHarness.topic, fcmProjectId: nil,
                variables: [], sounds: ["gate.caf"], credential: nil)
            let contents: [(DeliveryRequest.Content, Int32)] = [
                (.init(title: "Gate changed", body: "Boarding at B12", ios: .init(sound: .dictionary(name: "gate.caf", critical: true, volume: 0.8))), 801),
                (.init(ios: .init(badge: 5)), 802),
                (.init(ios: .init(sound: "default")), 803),
            ]
            var messages: [APNSMessagePlanned] = []
            for (content, broadLogId) in contents {
                guard
                    case .apns(let message) = try PlannerBuiltMessages.message(
                        app: app, token: APNSSenderHarness.token(), content: content, broadLogId: broadLogId)
                else {
                    Issue.record("not an APNs message")
                    return
                }
                messages.append(message)
            }
            let planned = messages
            try await h.publish(planned)
            let results = try await h.withSender { try await h.waitForResults(planned.count).byMessageId }
            for message in planned {
                #expect(results[message.messageId.uuidString.lowercased()]?.type == "MessageSent", "\(message.payload)")
                let logged = h.simulator.state.notifications(mId: String(try #require(message.broadLogId)))
                #expect(logged.count == 1 && logged.first?.pushType == "alert" && logged.first?.dId == "4127", "\(message.payload)")
            }
        }
    }

    @Test("429s then success: the message is retried through the retry topic and sent once")
    func transientThenSent() async throws {
        try await APNSSenderHarness.with { h in
            _ = h.simulator.state.updateFaults { $0.burst429 = 3 }
            let messages = (0..<2).map { _ in h.message(token: APNSSenderHarness.token()) }
            try await h.publish(messages)
            let results = try await h.withSender { try await h.waitForResults(2) }
            #expect(results.allSatisfy { $0.type == "MessageSent" })
            #expect(results.contains { ($0.attempts ?? 0) >= 2 })
            for message in messages {
                #expect(h.simulator.state.notifications(token: message.registrationToken).count == 1)
            }
            let retries = try await h.records(h.topics.apnsRetries.name)
            #expect(retries.count >= 3)
        }
    }

    @Test("429 TooManyRequests for one device token delays that message only: the other tokens are sent at once; the metric says scope=device")
    func tooManyRequestsForOneToken() async throws {
        try await APNSSenderHarness.with { h in
            // The simulator answers every request to a `busy…` token 429 TooManyRequests.
            let busy = h.message(token: APNSSenderHarness.token(prefix: "busy"), validFor: 15)
            let others = (0..<20).map { _ in h.message(token: APNSSenderHarness.token()) }
            try await h.publish([busy] + others)

            let opsPort = try EphemeralPort.next()
            let sender = try h.startExecutable(opsPort: opsPort)
            defer { sender.killIfRunning() }
            let results = try await h.waitForResults(1 + others.count, within: .seconds(40)).byMessageId
            for message in others {
                let id = message.messageId.uuidString.lowercased()
                #expect(results[id]?.type == "MessageSent")
                #expect(results[id]?.attempts == 1)
            }
            // The busy token's message backed off on the retry topic until its validity ran out.
            let result = try #require(results[busy.messageId.uuidString.lowercased()])
            #expect(result.type == "MessageExpired")
            #expect((result.attempts ?? 0) >= 2)
            let refused = h.simulator.state.counters.byReason["TooManyRequests", default: 0]
            #expect(refused >= 2)
            #expect(try await h.metric("push_sender_quota_exceeded_total", labels: [#"scope="device""#], opsPort: opsPort) == Double(refused))
            #expect(try await h.metric("push_sender_quota_exceeded_total", labels: [#"scope="project""#], opsPort: opsPort) ?? 0 == 0)
            await sender.terminate()
        }
    }

    @Test("a token that keeps failing with 503 is retried with backoff until validUntil, then expires")
    func retryUntilExpiry() async throws {
        try await APNSSenderHarness.with { h in
            let message = h.message(token: APNSSenderHarness.token(prefix: "e503"), validFor: 20)
            try await h.publish([message])
            let results = try await h.withSender { try await h.waitForResults(1, within: .seconds(45)) }
            let result = try #require(results.first)
            #expect(result.type == "MessageExpired")
            #expect((result.attempts ?? 0) >= 2)
            #expect(h.simulator.state.counters.byReason["ServiceUnavailable", default: 0] >= 2)
        }
    }

    @Test("an app whose active credential is a client certificate: messages sent over certificate auth, no provider token")
    func certificateCredential() async throws {
        let authority = try APNsCertificateAuthority()
        let certificate = try authority.issue(topic: APNSSenderHarness.topic)
        try await APNSSenderHarness.with(clientCAs: [authority.certificatePEM]) { h in
            // The simulator also has token auth on: a request without a trusted certificate and
            // without a token would get 403 MissingProviderToken.
            try await h.setCredential(certificate: certificate)
            let messages = (0..<3).map { _ in h.message(token: APNSSenderHarness.token()) }
            try await h.publish(messages)
            let results = try await h.withSender { try await h.waitForResults(3) }
            let byId = Dictionary(results.map { ($0.messageId, $0) }, uniquingKeysWith: { first, _ in first })
            for message in messages {
                let id = message.messageId.uuidString.lowercased()
                let result = try #require(byId[id])
                #expect(result.type == "MessageSent")
                #expect(result.providerMessageId == id)
                let logged = h.simulator.state.notifications(token: message.registrationToken)
                #expect(logged.count == 1)
                #expect(logged.first?.topic == APNSSenderHarness.topic)
            }
            #expect(h.simulator.state.counters.byReason.isEmpty)
        }
    }

    @Test("a sandbox app's message reaches only the APNS_SANDBOX_URL host, a production app's only the APNS_PRODUCTION_URL host")
    func environmentPicksTheHost() async throws {
        try await APNSSenderHarness.with(separateSandbox: true) { h in
            // The harness's app is a production app; this one a sandbox app of the same service.
            let sandboxApp = try await h.addApp(environment: "sandbox")
            let production = h.message(token: APNSSenderHarness.token())
            let sandbox = h.message(token: APNSSenderHarness.token(), app: sandboxApp, environment: "sandbox")
            try await h.publish([production, sandbox])
            let results = try await h.withSender { try await h.waitForResults(2) }
            #expect(results.byMessageId[production.messageId.uuidString.lowercased()]?.type == "MessageSent")
            #expect(results.byMessageId[sandbox.messageId.uuidString.lowercased()]?.type == "MessageSent")
            let atProduction = h.simulator.state.notifications()
            let atSandbox = h.sandboxSimulator.state.notifications()
            #expect(atProduction.map(\.mId) == [production.messageId.uuidString.lowercased()])
            #expect(atProduction.map(\.token) == [production.registrationToken])
            #expect(atSandbox.map(\.mId) == [sandbox.messageId.uuidString.lowercased()])
            #expect(atSandbox.map(\.token) == [sandbox.registrationToken])
        }
    }

    @Test("messages queued for a deleted app, new or retried, fail soft as app-deleted at once; another app's are sent")
    func deletedApp() async throws {
        try await APNSSenderHarness.with { h in
            let other = try await h.addApp(environment: "production")
            var queued = (0..<5).map { _ in h.message(token: APNSSenderHarness.token()) }
            var retried = h.message(token: APNSSenderHarness.token())
            retried.attempt = 2
            let kept = (0..<2).map { _ in h.message(token: APNSSenderHarness.token(), app: other) }
            // The harness's app is deleted (what the catalog projection does with AppDeleted)
            // while its messages wait on the message and retry topics.
            try await h.deleteApp(h.appId)
            try await h.publish(queued + kept)
            try await h.publish([retried], to: h.retryTopic)
            queued.append(retried)
            let results = try await h.withSender { try await h.waitForResults(8) }
            let byId = results.byMessageId
            for message in queued {
                let result = try #require(byId[message.messageId.uuidString.lowercased()])
                #expect(result.type == "MessageFailed")
                #expect(result.failureType == "soft")
                #expect(result.reason == "app-deleted")
                #expect(h.simulator.state.notifications(token: message.registrationToken).isEmpty)
            }
            for message in kept {
                #expect(byId[message.messageId.uuidString.lowercased()]?.type == "MessageSent")
                #expect(h.simulator.state.notifications(token: message.registrationToken).count == 1)
            }
            // Failed once each, never retried.
            #expect(try await h.records(h.retryTopic.name).count == 1)
        }
    }

    @Test("a refused key fails a few messages, the rest wait; after a rotation they are sent")
    func credentialRejectedThenRotated() async throws {
        // A cool-down well above the time the rotation takes to reach the sender (the first
        // result's trip through Kafka, 1 s, the credential cache): with the harness's 1.5 s, a
        // second message could fail when the cool-down ended just before the new key arrived.
        try await APNSSenderHarness.with(settings: ["APNS_SENDER_CREDENTIAL_COOLDOWN_MS": "5000"]) { h in
            // A key the simulator does not know: InvalidProviderToken.
            try await h.setCredential(teamId: APNSSenderHarness.teamId, keyId: "UNKNOWNKEY", key: P256.Signing.PrivateKey())
            let messages = (0..<20).map { _ in h.message(token: APNSSenderHarness.token()) }
            try await h.publish(messages)
            try await h.withSender {
                let early = try await h.waitForResults(1)
                #expect(early.allSatisfy { $0.type == "MessageFailed" && $0.reason == "InvalidProviderToken" })
                try await Task.sleep(for: .seconds(1))
                let failedBeforeRotation = try await h.results().count
                #expect(failedBeforeRotation <= 4, "the rest of the queue waits while the key is suspended")
                // The operator rotates the key (the admin API's effect on push.apps).
                try await h.setCredential(teamId: APNSSenderHarness.teamId, keyId: APNSSenderHarness.keyId, key: h.validKey)
                let all = try await h.waitForResults(20, within: .seconds(30))
                #expect(all.filter { $0.type == "MessageSent" }.count == 20 - failedBeforeRotation)
            }
        }
    }
}
