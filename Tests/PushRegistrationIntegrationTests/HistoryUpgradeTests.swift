import Foundation
import Kafka
import Logging
import PostgresNIO
import PushCredentials
import PushEvents
import PushRegistration
import PushRuntime
import PushStore
import PushTestSupport
import Testing

/// Issue 28's version-1 history: `pushctl topics upgrade-history` copies `push.subscriptions`
/// into a new topic where no record names a person in clear, through the real broker, database
/// and executable; a `pushctl projections replay` from the new topic rebuilds the devices.
@Suite("pushctl topics upgrade-history: the version-1 history rewritten", .serialized)
struct HistoryUpgradeTests {
    static func v1Registration(
        appId: UUID, token: String, userKey: String, registeredAt: Date = Date(), occurredAt: Date = Date()
    ) throws -> KafkaProducerRecord {
        let key = SubscriptionRegistered.key(appId: appId, registrationToken: token)
        let event = EventEnvelope(
            key: key,
            payload: SubscriptionRegistered(
                appId: appId, integrationKey: "k", platform: .ios, registrationToken: token, userKey: userKey, deviceImei: nil,
                deviceName: "Carol's phone", deviceModel: "", deviceBrand: "", deviceManufacturer: "", osName: "iOS", osVersion: "18.1", osLanguage: "fr",
                params: ["city": "Lyon"], registeredAt: registeredAt), occurredAt: occurredAt, correlationId: "upgrade-test")
        return KafkaProducerRecord(topic: "", key: Array(key.utf8), value: try event.encoded())
    }

    @Test(
        "registrations sealed, quarantines by digest, erased devices and deleted apps left out, other records copied; each in its partition and order; no byte names them; a replay from the new topic rebuilds the devices; a second run into a used topic is refused"
    )
    func upgradeSubscriptions() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let carol = "carol-\(suffix)@example.com"
        let dave = "dave-\(suffix)@example.com"
        let (carols, anonymous, daves, orphan) = (
            RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(), RegistrationEndpointTests.hexToken(),
            RegistrationEndpointTests.hexToken()
        )
        let source = "test.subscriptions.\(suffix)"
        let target = "test.subscriptions-v2.\(suffix)"
        try await RegistrationHarness.run(suffix: suffix) { h in
            let app = try await h.defineApp(platform: .ios)
            let before = Date().addingTimeInterval(-60)
            // The anonymous device's registration (version 1, keyed by token) and its
            // unsubscription (keyed by digest) in the same millisecond, the unsubscription in a
            // lower source partition: only the event type can order them (registration first).
            let instant = Date()
            var anonymousRegistration = try Self.v1Registration(
                appId: app.appId, token: anonymous, userKey: "", registeredAt: before, occurredAt: instant)
            anonymousRegistration.partition = 1
            var records = [
                try Self.v1Registration(appId: app.appId, token: carols, userKey: carol, registeredAt: before),
                anonymousRegistration,
                try Self.v1Registration(appId: app.appId, token: daves, userKey: dave, registeredAt: before),
                try Self.v1Registration(appId: UUID(), token: orphan, userKey: "", registeredAt: before),
            ]
            let quarantine = EventEnvelope(
                key: "\(app.appId):\(carols)",
                payload: SubscriptionDisabledV1(appId: app.appId, registrationToken: carols, reason: "Unregistered", invalidSince: Date()))
            records.append(KafkaProducerRecord(topic: "", key: Array(quarantine.metadata.key.utf8), value: try quarantine.encoded()))
            let unsubscription = EventEnvelope(
                key: SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: TokenDigest.of(anonymous)),
                payload: SubscriptionUnsubscribed(appId: app.appId, tokenDigest: TokenDigest.of(anonymous)), occurredAt: instant)
            records.append(
                KafkaProducerRecord(topic: "", key: Array(unsubscription.metadata.key.utf8), value: try unsubscription.encoded(), partition: 0))
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            for var record in records {
                record.topic = source
                _ = try await producer.send(record)
            }
            await producer.close()
            try await eventually("the version-1 registrations projected") {
                try await h.count("SELECT count(*)::int FROM push.subscriptions WHERE app_id = \(app.appId)") == 3
            }
            // Dave was erased after he registered (as PersonErasure records it).
            try await h.postgres.query(
                "INSERT INTO push.erased_devices (app_id, token_digest, erased_at) VALUES (\(app.appId), \(TokenDigest.of(daves)), now())", logger: h.logger)

            var environment = TestStack.environment
            environment["PUSH_TOPIC_SUBSCRIPTIONS"] = source
            let run = try await BuiltExecutable.run(
                "pushctl", arguments: ["topics", "upgrade-history", "--from", source, "--to", target], environment: environment)
            #expect(run.status == 0, "\(run.output)")
            for line in [
                "read 6 records of \(source)", "rewritten  2  SubscriptionRegistered v1 (sealed)", "rewritten  1  SubscriptionDisabled v1",
                "left out   1  SubscriptionRegistered v1 of an erased device", "left out   1  SubscriptionRegistered v1 of an app that no longer exists",
                "copied     1  as they were", "wrote 4 records to \(target)",
            ] {
                #expect(run.output.contains(line), "\(line) in \(run.output)")
            }

            // Every record of a device in one partition (its new key's), in the order of its events'
            // times; envelopes kept.
            let written = try await h.records(target)
            #expect(written.count == 4)
            let sourceIds = Set(try await h.records(source).map { try EventMetadata.decode($0.value).id })
            var byKey: [String: [(partition: Int32, offset: Int64, time: Date, type: String)]] = [:]
            for record in written {
                let metadata = try EventMetadata.decode(record.value)
                #expect(sourceIds.contains(metadata.id), "\(metadata.type) keeps its envelope id")
                #expect(metadata.version == 2 || metadata.type == "SubscriptionUnsubscribed")
                #expect(String(decoding: record.key ?? [], as: UTF8.self) == metadata.key)
                byKey[metadata.key, default: []].append((record.partition, record.offset, metadata.occurredAt, metadata.type))
            }
            let carolsEvents = try #require(byKey[SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: TokenDigest.of(carols))])
            #expect(carolsEvents.count == 2, "carol's registration and quarantine under one key")
            let anonymousEvents = try #require(byKey[SealedSubscriptionRegistered.key(appId: app.appId, tokenDigest: TokenDigest.of(anonymous))])
            #expect(
                anonymousEvents.sorted { $0.offset < $1.offset }.map(\.type) == ["SubscriptionRegistered", "SubscriptionUnsubscribed"],
                "a registration before its device's event of the same millisecond")
            for (key, events) in byKey {
                #expect(Set(events.map(\.partition)).count == 1, "\(key) in one partition")
                #expect(events.sorted { $0.offset < $1.offset }.map(\.time) == events.map(\.time).sorted(), "\(key) in time order")
            }
            // No byte names them; the digests are there.
            let bytes = written.flatMap { ($0.key ?? []) + $0.value + $0.headers.flatMap { Array($0.name.utf8) + ($0.value ?? []) } }
            let named = [carol, dave, carols, anonymous, daves, orphan, "Carol's phone", "Lyon"].filter { ErasureTests.contains(bytes, $0) }
            #expect(named == [], "names in the upgraded topic")
            #expect(ErasureTests.contains(bytes, TokenDigest.of(carols)))
            // The sealed registrations open with their subjects' keys to the same fields.
            var opened: [String: String] = [:]
            for record in written {
                var decoder = EventDecoder<SealedSubscriptionRegistered>()
                decoder.register(SealedSubscriptionRegistered.self) { event, _ in event }
                guard case .known(let sealed, _) = try decoder.decode(record.value) else { continue }
                let key = try await h.postgres.withConnection { connection in
                    try await PersonalDataKeys.keys(
                        [sealed.subjectId], wrapping: try CredentialCipher.dataKeys(fromEnvironment: TestStack.environment), on: connection, logger: h.logger)[
                            sealed.subjectId]
                }
                let dataKey = try #require(key, "the subject's key")
                let registration = try #require(PersonalDataKeys.open(sealed, key: dataKey))
                opened[registration.registrationToken] = registration.userKey
                #expect(registration.params == ["city": "Lyon"] && registration.deviceName == "Carol's phone")
            }
            #expect(opened == [carols: carol, anonymous: ""])

            // A second run into the same topic is refused; nothing is added.
            let again = try await BuiltExecutable.run(
                "pushctl", arguments: ["topics", "upgrade-history", "--from", source, "--to", target], environment: environment)
            #expect(again.status != 0 && again.output.contains("\(target) is not empty"), "\(again.output)")
            #expect(try await h.records(target).count == 4)
            // Only the three catalog topics can be upgraded.
            let other = try await BuiltExecutable.run(
                "pushctl", arguments: ["topics", "upgrade-history", "--from", "push.tracking", "--to", target], environment: environment)
            #expect(other.status != 0 && other.output.contains("--from must be"), "\(other.output)")

            // The switch: the projection's rows and position thrown away, then a replay from the new topic.
            let group = "test.subscriptions-projection.\(suffix)"
            try await h.postgres.query("DELETE FROM push.subscriptions WHERE app_id = \(app.appId)", logger: h.logger)
            environment["PUSH_TOPIC_SUBSCRIPTIONS"] = target
            environment["PUSH_TOPIC_CATALOG"] = "test.catalog.\(suffix)"
            environment["REGISTRATION_SUBSCRIPTIONS_GROUP"] = "\(group).rebuild"
            func rebuilt() async throws -> [String] {
                var rows: [String] = []
                for try await row in try await h.postgres.query(
                    """
                    SELECT registration_token || ' ' || user_key || ' ' || disabled::text || ' ' || (unsubscribed_at IS NOT NULL)::text
                    FROM push.subscriptions WHERE app_id = \(app.appId)
                    """, logger: h.logger
                ).decode(String.self) {
                    rows.append(row)
                }
                return rows.sorted()
            }
            let expected = ["\(carols) \(carol) true false", "\(anonymous)  false true"].sorted()
            let replay = try await BuiltExecutable.run(
                "pushctl", arguments: ["projections", "replay", "--only", "subscriptions", "--quiet-ms", "1000", "--timeout", "120"],
                environment: environment)
            #expect(replay.status == 0 && replay.output.contains("replay: caught up"), "\(replay.output)")
            let rows = try await rebuilt()
            #expect(rows == expected)
        }
    }

    @Test("delivery events and results: DeliveryAccepted v1 counted, exclusions and results v1 by digest; no byte names anyone")
    func upgradeDeliveryEventsAndResults() async throws {
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        let (erin, excluded, resulted) = ("erin-\(suffix)@example.com", "excluded-token-\(suffix)", "result-token-\(suffix)")
        let events = "test.delivery-events.\(suffix)"
        let results = "test.message-results.\(suffix)"
        try await RegistrationHarness.run(suffix: suffix) { h in
            let admin = try KafkaAdmin(configuration: h.configuration.kafka, logger: h.logger)
            _ = try await admin.createTopics([events, results].map { KafkaTopicSpecification(name: $0, partitions: 3) })
            await admin.close()
            func v1<P: PushEvent>(_ payload: P, key: String) throws -> [UInt8] {
                let text = String(decoding: try EventEnvelope(key: key, payload: payload).encoded(), as: UTF8.self)
                return Array(text.replacingOccurrences(of: #""version":\#(P.eventVersion)"#, with: #""version":1"#).utf8)
            }
            let accepted = DeliveryAccepted(
                deliveryId: "d-\(suffix)", requestId: "r-\(suffix)", serviceId: UUID(), serviceName: "s", apps: [],
                audience: .init(userKeys: [erin, "frank-\(suffix)"]), content: .init(body: "x"), validUntil: Date(), sendAt: Date(),
                throttlePerSecond: nil, acceptedAt: Date(), proof: .init(userKeys: [erin], registrationTokens: [excluded]))
            let exclusions = DeliveryExclusionsRecordedV1(
                deliveryId: "d-\(suffix)", exclusions: [.init(appId: UUID(), registrationToken: excluded, platform: .ios, reason: "unsubscribed")],
                excludedAt: Date())
            let result =
                #"{"causationId":null,"correlationId":"d","data":{"attempts":1,"message":{"appId":"5D76E9B2-6E0E-4205-9A03-8178AEF77AF4","#
                + #""deliveryId":"d","messageId":"239802AA-B5A1-8AB0-A59B-36BF6E8D10C7","platform":"ios","registrationToken":"\#(resulted)"},"#
                + #""providerMessageId":"p","sentAt":"2026-11-22T10:00:00.125Z"},"id":"3f0c2a7e-5b1d-4c8e-9a64-0d2f7c1b9e55","key":"k","occurredAt":"2026-11-22T10:00:00.125Z","#
                + #""type":"MessageSent","version":1}"#
            let producer = try KafkaProducer(configuration: h.configuration.producer, logger: h.logger)
            for record in [
                KafkaProducerRecord(topic: events, key: "d-\(suffix)", value: try v1(accepted, key: "d-\(suffix)")),
                KafkaProducerRecord(topic: events, key: "d-\(suffix)", value: try v1(exclusions, key: "d-\(suffix)")),
                KafkaProducerRecord(topic: results, key: "k", value: Array(result.utf8)),
            ] {
                _ = try await producer.send(record)
            }
            await producer.close()

            var environment = TestStack.environment
            environment["PUSH_TOPIC_DELIVERY_EVENTS"] = events
            environment["PUSH_TOPIC_MESSAGE_RESULTS"] = results
            for (source, expected) in [
                (events, ["rewritten  1  DeliveryAccepted v1", "rewritten  1  DeliveryExclusionsRecorded v1", "wrote 2 records"]),
                (results, ["rewritten  1  MessageSent v1", "wrote 1 records"]),
            ] {
                let run = try await BuiltExecutable.run(
                    "pushctl", arguments: ["topics", "upgrade-history", "--from", source, "--to", "\(source).v2"], environment: environment)
                #expect(run.status == 0, "\(run.output)")
                for line in expected { #expect(run.output.contains(line), "\(line) in \(run.output)") }
            }
            let written = try await h.records("\(events).v2") + h.records("\(results).v2")
            #expect(written.count == 3)
            let bytes = written.flatMap { ($0.key ?? []) + $0.value }
            let named = [erin, "frank-\(suffix)", excluded, resulted].filter { ErasureTests.contains(bytes, $0) }
            #expect(named == [], "names in the upgraded topics")
            for (what, text) in [
                ("the audience counted", #""userKeyCount":2"#), ("the proof counted", #""registrationTokenCount":1"#),
                ("the exclusion by digest", TokenDigest.of(excluded)), ("the result by digest", TokenDigest.of(resulted)),
            ] {
                #expect(ErasureTests.contains(bytes, text), "\(what)")
            }
        }
    }
}
