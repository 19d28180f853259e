import Foundation
import PushEvents
import Testing

struct Greeting: PushEvent, Equatable {
    static let eventType = "Greeting"
    static let eventVersion = 2
    var name: String
    var times: Int
}

/// Version 1 of `Greeting` had only a name; the upcaster maps it to version 2.
struct GreetingV1: PushEvent {
    static let eventType = "Greeting"
    static let eventVersion = 1
    var name: String
}

enum TestEvent: Equatable, Sendable {
    case greeting(Greeting)
}

@Suite("Event envelope")
struct EventEnvelopeTests {
    var decoder: EventDecoder<TestEvent> {
        var decoder = EventDecoder<TestEvent>()
        decoder.register(Greeting.self) { payload, _ in .greeting(payload) }
        decoder.register(GreetingV1.self) { payload, _ in .greeting(Greeting(name: payload.name, times: 1)) }
        return decoder
    }

    @Test("an envelope encodes every metadata field and decodes back to the same event")
    func roundTrip() throws {
        let occurred = Date(timeIntervalSince1970: 1_795_000_000.5)
        let envelope = EventEnvelope(
            key: "app-1:token", payload: Greeting(name: "Ada", times: 3), occurredAt: occurred,
            correlationId: "crm-0001", causationId: "cmd-1"
        )
        let bytes = try envelope.encoded()
        let json = try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
        #expect(json["type"] as? String == "Greeting")
        #expect(json["version"] as? Int == 2)
        #expect(json["occurredAt"] as? String == "2026-11-18T11:06:40.500Z")
        #expect(json["key"] as? String == "app-1:token")
        #expect(json["correlationId"] as? String == "crm-0001")
        #expect(json["causationId"] as? String == "cmd-1")
        #expect((json["data"] as? [String: Any])?["name"] as? String == "Ada")

        guard case .known(let event, let metadata) = try decoder.decode(bytes) else {
            Issue.record("expected a known event")
            return
        }
        #expect(event == .greeting(Greeting(name: "Ada", times: 3)))
        #expect(metadata == envelope.metadata)
    }

    @Test("fields added by a newer producer are ignored")
    func addedFields() throws {
        let json =
            #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Greeting","version":2,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"Bo","times":2,"mood":"happy"},"tenant":"acme"}"#
        guard case .known(let event, let metadata) = try decoder.decode(Array(json.utf8)) else {
            Issue.record("expected a known event")
            return
        }
        #expect(event == .greeting(Greeting(name: "Bo", times: 2)))
        #expect(metadata.correlationId == nil)
    }

    @Test("an older version is upcast to the current event")
    func upcast() throws {
        let old = try EventEnvelope(key: "k", payload: GreetingV1(name: "Cy")).encoded()
        guard case .known(let event, let metadata) = try decoder.decode(old) else {
            Issue.record("expected a known event")
            return
        }
        #expect(event == .greeting(Greeting(name: "Cy", times: 1)))
        #expect(metadata.version == 1)
    }

    @Test("unknown types and versions decode to .unknown with their metadata")
    func unknownTypes() throws {
        let newer = #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Greeting","version":9,"occurredAt":"2026-11-22T10:00:00.5Z","key":"k","data":{}}"#
        let other =
            #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"SomethingElse","version":1,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":[1,2]}"#
        for json in [newer, other] {
            guard case .unknown(let metadata) = try decoder.decode(Array(json.utf8)) else {
                Issue.record("expected an unknown event")
                continue
            }
            #expect(metadata.key == "k")
        }
    }

    @Test("bad records give a reason that names the problem, not the content")
    func badRecords() throws {
        let cases: [(String, EventDecodingError.Reason, String)] = [
            ("not json at all", .malformedEnvelope, "not valid JSON"),
            (#"{"type":"Greeting","version":2}"#, .malformedEnvelope, "missing field"),
            (
                #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Greeting","version":2,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"secret-value"}}"#,
                .invalidPayload, "missing field times"
            ),
            (
                #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Greeting","version":2,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"x","times":"secret-value"}}"#,
                .invalidPayload, "wrong type at data.times"
            ),
        ]
        expectRefused(cases, by: decoder)
    }

    @Test("the envelope fields read by hand (payload skipped) equal the decoder's, whatever the payload holds")
    func metadataFastPath() throws {
        let id = "6b6499a8-9d43-4bc5-acf0-b6aeb96846f6"
        let texts = [
            #"{"id":"\#(id)","type":"Greeting","version":2,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"x","times":1}}"#,
            #"{"data":{"a":[1,{"b":null},"c\"d"],"e":true},"causationId":"c","correlationId":null,"id":"\#(id)","key":"app:tok","occurredAt":"2026-11-22T10:00:00.123Z","type":"T","version":1}"#,
            #"{"id":"\#(id)","type":"T","version":3,"occurredAt":"2026-11-22T10:00:00Z","key":"k"}"#,
            // Read by the decoder only (a fraction in the payload, an escaped key): same answer.
            #"{"id":"\#(id)","type":"T","version":1,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"ratio":0.5}}"#,
            #"{"id":"\#(id)","type":"T","version":1,"occurredAt":"2026-11-22T10:00:00Z","k\u0065y":"k","data":{}}"#,
        ]
        for text in texts {
            let bytes = Array(text.utf8)
            #expect(try EventMetadata.decode(bytes) == EventJSON.decoder.decode(EventMetadata.self, from: Data(bytes)), "\(text)")
        }
        #expect(throws: EventDecodingError.self) { try EventMetadata.decode(Array(#"{"id":"\#(id)","type":"T","version":1,"key":"k"}"#.utf8)) }
    }

    @Test("version-1 quarantine events (token in clear) read as version 2: the token replaced by its SHA-256, lowercase hex")
    func quarantineEventsUpcastToDigest() throws {
        // SHA-256("abc"), the FIPS 180-2 test vector.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        #expect(TokenDigest.of("abc") == abc)
        let appId = UUID()
        #expect(TokenDigest.subscriptionKey(appId: appId, tokenDigest: abc) == "\(appId.uuidString.lowercased()):\(abc)")

        enum Read: Equatable {
            case disabled(SubscriptionDisabled)
            case reenabled(SubscriptionReenabled)
            case purged(SubscriptionPurged)
        }
        var decoder = EventDecoder<Read>()
        decoder.register(SubscriptionDisabled.self) { event, _ in .disabled(event) }
        decoder.register(SubscriptionDisabledV1.self) { event, _ in .disabled(event.upcast) }
        decoder.register(SubscriptionReenabled.self) { event, _ in .reenabled(event) }
        decoder.register(SubscriptionReenabledV1.self) { event, _ in .reenabled(event.upcast) }
        decoder.register(SubscriptionPurged.self) { event, _ in .purged(event) }
        decoder.register(SubscriptionPurgedV1.self) { event, _ in .purged(event.upcast) }
        func read(_ bytes: [UInt8]) throws -> Read? {
            if case .known(let event, _) = try decoder.decode(bytes) { return event }
            return nil
        }
        let since = Date(timeIntervalSince1970: 1_700_000_000)
        let disabled = SubscriptionDisabled(appId: appId, tokenDigest: abc, reason: "Unregistered", invalidSince: since)
        let v1 = try EventEnvelope(
            key: "k", payload: SubscriptionDisabledV1(appId: appId, registrationToken: "abc", reason: "Unregistered", invalidSince: since)
        ).encoded()
        #expect(try read(v1) == .disabled(disabled))
        let v2 = try EventEnvelope(key: "k", payload: disabled).encoded()
        #expect(try read(v2) == .disabled(disabled))
        #expect(!String(decoding: v2, as: UTF8.self).contains("registrationToken"))
        #expect(
            try read(EventEnvelope(key: "k", payload: SubscriptionReenabledV1(appId: appId, registrationToken: "abc")).encoded())
                == .reenabled(SubscriptionReenabled(appId: appId, tokenDigest: abc)))
        #expect(
            try read(EventEnvelope(key: "k", payload: SubscriptionPurgedV1(appId: appId, registrationToken: "abc")).encoded())
                == .purged(SubscriptionPurged(appId: appId, tokenDigest: abc)))
    }

    @Test("DeliveryExclusionsRecorded version 2 names devices by digest only; version 1 (tokens in clear) upcasts to the same exclusions")
    func exclusionsByDigest() throws {
        let abc = TokenDigest.of("abc")
        let appId = UUID()
        let at = Date(timeIntervalSince1970: 1_700_000_000)
        let v2 = DeliveryExclusionsRecorded(
            deliveryId: "42", exclusions: [.init(appId: appId, tokenDigest: abc, platform: .ios, reason: "quarantined: Unregistered")], excludedAt: at)
        let v1 = DeliveryExclusionsRecordedV1(
            deliveryId: "42", exclusions: [.init(appId: appId, registrationToken: "abc", platform: .ios, reason: "quarantined: Unregistered")],
            excludedAt: at)
        #expect(v1.upcast == v2)
        var decoder = EventDecoder<DeliveryExclusionsRecorded>()
        decoder.register(DeliveryExclusionsRecorded.self) { event, _ in event }
        decoder.register(DeliveryExclusionsRecordedV1.self) { event, _ in event.upcast }
        for (payload, version) in [(try EventEnvelope(key: "42", payload: v2).encoded(), 2), (try EventEnvelope(key: "42", payload: v1).encoded(), 1)] {
            guard case .known(let event, let metadata) = try decoder.decode(payload) else {
                Issue.record("expected a known event")
                continue
            }
            #expect(event == v2 && metadata.version == version)
        }
        let written = String(decoding: try EventEnvelope(key: "42", payload: v2).encoded(), as: UTF8.self)
        #expect(written.contains("\"version\":2") && written.contains(abc) && !written.contains("registrationToken"))
    }
}

/// A decoder with one registration takes a one-parse path (the senders'): it must answer exactly
/// as the two-step path does.
@Suite("Event envelope: a decoder of one event type")
struct SingleTypeDecoderTests {
    var decoder: EventDecoder<TestEvent> {
        var decoder = EventDecoder<TestEvent>()
        decoder.register(Greeting.self) { payload, _ in .greeting(payload) }
        return decoder
    }

    @Test("its type and version: known, with the record's metadata")
    func known() throws {
        // Whole milliseconds: events carry their time to the millisecond.
        let occurred = Date(timeIntervalSince1970: 1_795_000_000.25)
        let envelope = EventEnvelope(key: "k", payload: Greeting(name: "Ada", times: 3), occurredAt: occurred, correlationId: "c-1")
        guard case .known(let event, let metadata) = try decoder.decode(try envelope.encoded()) else {
            Issue.record("expected a known event")
            return
        }
        #expect(event == .greeting(Greeting(name: "Ada", times: 3)))
        #expect(metadata == envelope.metadata)
    }

    @Test("another type with the same fields, or another version of its type: unknown")
    func lookalikes() throws {
        let otherType =
            #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Farewell","version":2,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"Bo","times":2}}"#
        let otherVersion =
            #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Greeting","version":3,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"Bo","times":2}}"#
        for json in [otherType, otherVersion] {
            guard case .unknown(let metadata) = try decoder.decode(Array(json.utf8)) else {
                Issue.record("expected an unknown event: \(json)")
                continue
            }
            #expect(metadata.key == "k")
        }
    }

    @Test("bad records: the same reasons as the two-step path")
    func badRecords() throws {
        let cases: [(String, EventDecodingError.Reason, String)] = [
            ("not json at all", .malformedEnvelope, "not valid JSON"),
            (#"{"type":"Greeting","version":2,"data":{"name":"x","times":1}}"#, .malformedEnvelope, "missing field"),
            (
                #"{"id":"6b6499a8-9d43-4bc5-acf0-b6aeb96846f6","type":"Greeting","version":2,"occurredAt":"2026-11-22T10:00:00Z","key":"k","data":{"name":"x","times":"secret-value"}}"#,
                .invalidPayload, "wrong type at data.times"
            ),
        ]
        expectRefused(cases, by: decoder)
    }
}

/// Each bad record is refused with its reason, a description naming the problem, and never the
/// offending value.
func expectRefused(_ cases: [(String, EventDecodingError.Reason, String)], by decoder: EventDecoder<TestEvent>) {
    for (json, reason, fragment) in cases {
        let error = #expect(throws: EventDecodingError.self) { try decoder.decode(Array(json.utf8)) }
        #expect(error?.reason == reason)
        #expect(error?.description.contains(fragment) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("secret-value") == false)
    }
}

@Suite("Topic catalog")
struct TopicCatalogTests {
    @Test("defaults follow DESIGN.md and every consumed topic has a dead-letter topic")
    func defaults() {
        let catalog = TopicCatalog()
        #expect(catalog.deliveryRequests.name == "push.delivery-requests")
        #expect(catalog.dlq(for: "push.delivery-requests") == "push.delivery-requests.dlq")
        #expect(catalog.dlq(for: "push.tracking") == "push.tracking.dlq")
        #expect(Set(catalog.all.map(\.name)).count == catalog.all.count, "names are unique")
        #expect(catalog.tracking.config["retention.ms"] == "-1")
    }

    @Test("retention: source-of-truth topics forever, messages, retries and upstream requests 28 + 7 days, results and tracking as set")
    func retention() {
        let day: Int64 = 24 * 3600 * 1000
        let catalog = TopicCatalog()
        for topic in [catalog.subscriptions, catalog.catalog, catalog.deliveryEvents, catalog.messageResults, catalog.tracking] {
            #expect(topic.config["retention.ms"] == "-1", "\(topic.name)")
        }
        for topic in [catalog.apnsMessages, catalog.fcmMessages, catalog.apnsRetries, catalog.fcmRetries, catalog.deliveryRequests] {
            #expect(topic.retentionMilliseconds == 35 * day, "\(topic.name)")
        }
        #expect(catalog.deadLetters.allSatisfy { $0.retentionMilliseconds == 30 * day })
        let bounded = TopicCatalog(resultsRetentionDays: 90, trackingRetentionDays: 45)
        #expect(bounded.messageResults.config["retention.ms"] == String(90 * day))
        #expect(bounded.tracking.config["retention.ms"] == String(45 * day))
        #expect(bounded.subscriptions.retentionMilliseconds == -1)
    }

    @Test("names and partition counts are configurable per deployment")
    func overrides() {
        let catalog = TopicCatalog(environment: ["PUSH_TOPIC_TRACKING": "acme.tracking", "PUSH_TOPIC_TRACKING_PARTITIONS": "48"])
        #expect(catalog.tracking.name == "acme.tracking")
        #expect(catalog.tracking.partitions == 48)
        #expect(catalog.dlq(for: "acme.tracking") == "acme.tracking.dlq")
    }
}
