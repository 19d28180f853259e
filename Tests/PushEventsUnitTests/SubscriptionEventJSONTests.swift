import Foundation
import Testing

@testable import PushEvents

/// The hand-written JSON of a version-2 registration (`SealedSubscriptionRegistered`) and of the
/// personal fields it seals must mean what the Codable path means: the encoder's bytes for the
/// event, the decoder's values for both, and the fields sealed before the writer existed
/// (`JSONEncoder()`'s output) still read.
@Suite("Hand-written registration JSON")
struct SubscriptionEventJSONTests {
    typealias Values = EventJSONTests.Values

    static func sealed(_ values: inout Values) -> SealedSubscriptionRegistered {
        SealedSubscriptionRegistered(
            appId: values.uuid(), integrationKey: values.text(), platform: Bool.random(using: &values) ? .ios : .android, subjectId: values.uuid(),
            tokenDigest: values.text(), sealed: values.text(), registeredAt: values.date())
    }

    static func fields(_ values: inout Values, plainKeys: Bool = false) -> SubscriptionPersonalFields {
        var params: [String: String] = [:]
        for index in 0..<Int.random(in: 0...6, using: &values) {
            params[plainKeys ? "k\(index)-\(values.int())" : values.text()] = values.text()
        }
        return SubscriptionPersonalFields(
            registrationToken: values.text(), userKey: values.text(), deviceImei: values.maybe(values.text()), deviceName: values.text(),
            deviceModel: values.text(), deviceBrand: values.text(), deviceManufacturer: values.text(), osName: values.text(),
            osVersion: values.text(), osLanguage: values.text(), params: params)
    }

    @Test("SealedSubscriptionRegistered: the encoder's bytes and the decoder's values, for 500 random values")
    func sealedEvent() throws {
        var values = Values(state: 11)
        for _ in 0..<500 {
            let envelope = values.envelope(Self.sealed(&values))
            try EventJSONTests.expectSameBytes(envelope)
            try EventJSONTests.expectSameValue(try EventJSONTests.codable(envelope), as: SealedSubscriptionRegistered.self)
        }
        // What the subscription projection's decoder makes of the service's record.
        var decoder = EventDecoder<SealedSubscriptionRegistered>()
        decoder.register(SealedSubscriptionRegistered.self) { event, _ in event }
        let event = Self.sealed(&values)
        guard case .known(let read, _) = try decoder.decode(try values.envelope(event).encoded()) else {
            Issue.record("not read")
            return
        }
        // Equal but for the instant, which the record keeps to the millisecond.
        var expected = event
        expected.registeredAt = read.registeredAt
        #expect(read == expected)
        #expect(abs(read.registeredAt.timeIntervalSince(event.registeredAt)) < 0.001)
    }

    @Test("personal fields: the writer's JSON reads back equal by the reader and by JSONDecoder; JSONEncoder()'s (sealed before) reads equal too")
    func personalFields() throws {
        var values = Values(state: 12)
        for round in 0..<500 {
            let fields = Self.fields(&values, plainKeys: round.isMultiple(of: 2))
            let written = fields.json
            #expect(SubscriptionPersonalFields(json: written) == fields, "\(String(decoding: written, as: UTF8.self))")
            #expect(try JSONDecoder().decode(SubscriptionPersonalFields.self, from: Data(written)) == fields)
            #expect(SubscriptionPersonalFields(json: Array(try JSONEncoder().encode(fields))) == fields)
            if round.isMultiple(of: 2) {
                // Keys without escapes: the hand-written reader itself reads it, not the fallback.
                var reader = EventJSONReader(written)
                #expect(try SubscriptionPersonalFields(reading: &reader) == fields)
            }
        }
    }

    @Test("personal fields the reader leaves to JSONDecoder: a duplicate parameter, an escaped key; not JSON at all is nil")
    func personalFieldsEdges() throws {
        let base =
            #"{"deviceBrand":"b","deviceManufacturer":"m","deviceModel":"x","deviceName":"n","osLanguage":"fr","osName":"iOS","osVersion":"17","registrationToken":"t","userKey":"u","params":"#
        let duplicate = Array((base + #"{"a":"1","a":"2"}}"#).utf8)
        var reader = EventJSONReader(duplicate)
        #expect(throws: EventJSONReader.Unsupported.self) { try SubscriptionPersonalFields(reading: &reader) }
        let decoded = try? JSONDecoder().decode(SubscriptionPersonalFields.self, from: Data(duplicate))
        #expect(SubscriptionPersonalFields(json: duplicate) == decoded)
        let escaped = Array((base + #"{"caf\u00e9":"1"}}"#).utf8)
        #expect(SubscriptionPersonalFields(json: escaped)?.params == ["café": "1"])
        #expect(SubscriptionPersonalFields(json: Array((base + "{}}").utf8))?.deviceImei == nil)
        #expect(SubscriptionPersonalFields(json: Array(#"{"userKey":"u"}"#.utf8)) == nil)
        #expect(SubscriptionPersonalFields(json: Array("not json".utf8)) == nil)
    }
}
