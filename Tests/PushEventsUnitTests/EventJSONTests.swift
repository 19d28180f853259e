import Crypto
import Foundation
import PushWire
import Testing

@testable import PushEvents

/// The hand-written JSON of the per-notification events (EventJSONWriter, EventJSONReader) must
/// be indistinguishable from the Codable path: the same bytes out, the same values in.
@Suite("Hand-written event JSON")
struct EventJSONTests {
    /// Reproducible pseudo-random values (SplitMix64).
    struct Values: RandomNumberGenerator {
        var state: UInt64

        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }

        /// Text with everything JSON escapes or could get wrong: controls, quotes, backslashes,
        /// slashes, DEL, accents, U+2028, an emoji.
        mutating func text() -> String {
            let pieces = [
                "a", "Z", "0", " ", "\"", "\\", "/", "\u{0}", "\u{8}", "\t", "\n", "\u{b}", "\u{c}", "\r", "\u{1f}", "\u{7f}", "é", "\u{2028}", "😀",
                "{\"aps\":", "}",
            ]
            return (0..<Int.random(in: 0...12, using: &self)).map { _ in pieces.randomElement(using: &self)! }.joined()
        }

        mutating func date() -> Date {
            // Any instant, not only whole milliseconds: the writer truncates to the millisecond.
            Date(timeIntervalSince1970: Double.random(in: 0...4_000_000_000, using: &self))
        }

        mutating func int() -> Int {
            [0, 1, 5, 10, -3, Int.max, Int.min, Int.random(in: -1_000_000...1_000_000, using: &self)].randomElement(using: &self)!
        }

        mutating func uuid() -> UUID {
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &self) }
            return UUID(
                uuid: (
                    bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9], bytes[10], bytes[11], bytes[12],
                    bytes[13], bytes[14], bytes[15]
                ))
        }

        mutating func maybe<T>(_ value: T) -> T? { Bool.random(using: &self) ? value : nil }

        /// A broadLog id or none (records planned before broadLog ids existed).
        mutating func broadLogId() -> Int32? {
            maybe([1, 7, Int32.max, Int32.min, -1, Int32.random(in: 1...Int32.max, using: &self)].randomElement(using: &self)!)
        }

        mutating func credential() -> CredentialReference {
            CredentialReference(credentialId: uuid(), kind: text(), fingerprint: text())
        }

        mutating func reference() -> MessageReference {
            // `plannedAt` (added later) from a generator of its own, as `throttle`.
            var side = Values(state: state ^ 0x91A7_7ED0)
            return MessageReference(
                messageId: uuid(), broadLogId: broadLogId(), deliveryId: text(), appId: uuid(), tokenDigest: text(),
                platform: Platform.allCases.randomElement(using: &self)!, plannedAt: side.maybe(side.date()), language: language(),
                variant: variant())
        }

        /// A `content.languages` tag or none, from a generator of its own (added later, as
        /// `throttle`).
        func language() -> String? {
            var side = Values(state: state ^ 0x1A76_0A6E)
            return side.maybe(side.text())
        }

        /// An A/B variant's name or none, from a generator of its own (added later).
        func variant() -> String? {
            var side = Values(state: state ^ 0x0AB0_0AB0)
            return side.maybe(side.text())
        }

        /// From a generator of its own, so the other values are those of the sequence before the
        /// member existed.
        func throttle() -> Int? {
            var side = Values(state: state ^ 0x7411_7A11)
            return side.maybe(Int(Int32.random(in: Int32.min...Int32.max, using: &side)))
        }

        mutating func apns() -> APNSMessagePlanned {
            APNSMessagePlanned(
                messageId: uuid(), broadLogId: broadLogId(), deliveryId: text(), appId: uuid(), registrationToken: text(), environment: text(),
                credential: maybe(credential()), topic: text(), pushType: text(), priority: int(), collapseId: maybe(text()),
                payload: text(), validUntil: date(), attempt: int(), plannedAt: date(), notBefore: maybe(date()),
                throttlePerSecond: throttle(), language: language(), variant: variant()
            )
        }

        mutating func fcm() -> FCMMessagePlanned {
            FCMMessagePlanned(
                messageId: uuid(), broadLogId: broadLogId(), deliveryId: text(), appId: uuid(), registrationToken: text(), projectId: text(),
                credential: maybe(credential()), message: text(), validUntil: date(), attempt: int(), plannedAt: date(), notBefore: maybe(date()),
                throttlePerSecond: throttle(), language: language(), variant: variant()
            )
        }

        mutating func envelope<Payload: PushEvent>(_ payload: Payload) -> EventEnvelope<Payload> {
            EventEnvelope(key: text(), payload: payload, id: uuid(), occurredAt: date(), correlationId: maybe(text()), causationId: maybe(text()))
        }
    }

    static func codable<Payload: PushEvent>(_ envelope: EventEnvelope<Payload>) throws -> [UInt8] {
        Array(try EventJSON.encoder.encode(EventEnvelope<Payload>.Wire(metadata: envelope.metadata, data: envelope.payload)))
    }

    static func expectSameBytes<Payload: PushEvent & EventJSONWritable>(_ envelope: EventEnvelope<Payload>) throws {
        let written = envelope.encoded(writing: envelope.payload)
        let encoded = try codable(envelope)
        #expect(written == encoded, "\(String(decoding: written, as: UTF8.self))\n\(String(decoding: encoded, as: UTF8.self))")
    }

    @Test("every hand-written event: the encoder's bytes, for 500 random values each")
    func sameBytes() throws {
        var values = Values(state: 1)
        for _ in 0..<500 {
            try Self.expectSameBytes(values.envelope(values.apns()))
            try Self.expectSameBytes(values.envelope(values.fcm()))
            try Self.expectSameBytes(values.envelope(values.apns().sealed(subjectId: values.uuid(), key: Self.key)))
            try Self.expectSameBytes(values.envelope(values.fcm().sealed(subjectId: values.uuid(), key: Self.key)))
            try Self.expectSameBytes(
                values.envelope(MessageSent(message: values.reference(), providerMessageId: values.text(), attempts: values.int(), sentAt: values.date())))
            try Self.expectSameBytes(
                values.envelope(
                    MessageFailed(
                        message: values.reference(), failureType: values.text(), reason: values.text(), attempts: values.int(), failedAt: values.date())))
            try Self.expectSameBytes(values.envelope(MessageExpired(message: values.reference(), attempts: values.int(), expiredAt: values.date())))
            try Self.expectSameBytes(values.envelope(MessageCancelled(message: values.reference(), attempts: values.int(), cancelledAt: values.date())))
            try Self.expectSameBytes(
                values.envelope(
                    SubscriptionDisabled(appId: values.uuid(), tokenDigest: values.text(), reason: values.text(), invalidSince: values.date())))
            try Self.expectSameBytes(
                values.envelope(
                    TrackingHitRecorded(
                        trackingId: values.uuid(), messageId: values.text(), messageIdForm: values.text(), deliveryId: values.text(),
                        tagId: Int32(truncatingIfNeeded: values.int()), kind: values.text(), occurredAt: values.date())))
        }
    }

    @Test("encoded() takes the hand-written path and gives the same record")
    func encodedUsesWriter() throws {
        var values = Values(state: 2)
        let envelope = values.envelope(values.apns())
        #expect(try envelope.encoded() == Self.codable(envelope))
    }

    /// What the decoder makes of a record, to compare with the reader's result.
    static func decoded<Payload: PushEvent>(_ bytes: [UInt8], as _: Payload.Type) throws -> (Payload, EventMetadata) {
        let wire = try EventJSON.decoder.decode(EventEnvelope<Payload>.Wire.self, from: Data(bytes))
        return (wire.data, wire.metadata)
    }

    static func expectSameValue<Payload: PushEvent & EventJSONReadable & Equatable>(_ bytes: [UInt8], as type: Payload.Type) throws {
        let read = try EventEnvelope<Payload>.read(bytes)
        let (payload, metadata) = try decoded(bytes, as: type)
        #expect(read.payload == payload, "\(String(decoding: bytes, as: UTF8.self))")
        #expect(read.metadata == metadata)
    }

    @Test("the messages the senders read: the decoder's values, for 500 random records each")
    func sameValues() throws {
        var values = Values(state: 3)
        for _ in 0..<500 {
            try Self.expectSameValue(Self.codable(values.envelope(values.apns())), as: APNSMessagePlanned.self)
            try Self.expectSameValue(Self.codable(values.envelope(values.fcm())), as: FCMMessagePlanned.self)
            try Self.expectSameValue(Self.codable(values.envelope(values.apns().sealed(subjectId: values.uuid(), key: Self.key))), as: APNSMessagePlanned.self)
            try Self.expectSameValue(Self.codable(values.envelope(values.fcm().sealed(subjectId: values.uuid(), key: Self.key))), as: FCMMessagePlanned.self)
        }
    }

    @Test("the results and hits the projections read: the decoder's values, for 500 random records each")
    func projectedValues() throws {
        var values = Values(state: 5)
        for _ in 0..<500 {
            try Self.expectSameValue(
                Self.codable(
                    values.envelope(MessageSent(message: values.reference(), providerMessageId: values.text(), attempts: values.int(), sentAt: values.date()))),
                as: MessageSent.self)
            try Self.expectSameValue(
                Self.codable(
                    values.envelope(
                        MessageFailed(
                            message: values.reference(), failureType: values.text(), reason: values.text(), attempts: values.int(), failedAt: values.date()))),
                as: MessageFailed.self)
            try Self.expectSameValue(
                Self.codable(values.envelope(MessageExpired(message: values.reference(), attempts: values.int(), expiredAt: values.date()))),
                as: MessageExpired.self)
            try Self.expectSameValue(
                Self.codable(values.envelope(MessageCancelled(message: values.reference(), attempts: values.int(), cancelledAt: values.date()))),
                as: MessageCancelled.self)
            try Self.expectSameValue(
                Self.codable(
                    values.envelope(
                        TrackingHitRecorded(
                            trackingId: values.uuid(), messageId: values.text(), messageIdForm: values.text(), deliveryId: values.text(),
                            tagId: Int32(truncatingIfNeeded: values.int()), kind: values.text(), occurredAt: values.date()))),
                as: TrackingHitRecorded.self)
        }
        // A platform the enum does not have is left to the decoder, which names it.
        let sent = MessageSent(message: values.reference(), providerMessageId: "p", attempts: 1, sentAt: values.date())
        let bytes = Array(
            String(decoding: try Self.codable(values.envelope(sent)), as: UTF8.self)
                .replacingOccurrences(of: #""platform":"\#(sent.message.platform.rawValue)""#, with: #""platform":"windows""#).utf8)
        #expect(throws: EventJSONReader.Unsupported.self) { try EventEnvelope<MessageSent>.read(bytes) }
        var decoder = EventDecoder<MessageSent>()
        decoder.register(MessageSent.self) { payload, _ in payload }
        #expect(throws: EventDecodingError.self) { try decoder.decode(bytes) }
    }

    static let sample = #"""
        {"causationId":null,"correlationId":"d-1","data":{"appId":"6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6","attempt":1,"collapseId":null,
        "credential":{"credentialId":"1b6499a8-9d43-4bc5-acf0-b6aeb96846f6","fingerprint":"f","kind":"apns-token"},"deliveryId":"d-1",
        "environment":"sandbox","messageId":"2B6499A8-9D43-4BC5-ACF0-B6AEB96846F6","payload":"{\"aps\":{\"alert\":\"caf\u00e9 \ud83d\ude00 a\/b\"}}",
        "plannedAt":"2026-11-25T10:00:00Z","priority":10,"pushType":"alert","registrationToken":"t","topic":"com.example",
        "validUntil":"2026-11-26T10:00:00.250Z","future":{"list":[1,-2,"x",true,false,null,{}],"empty":[]}},
        "id":"3B6499A8-9D43-4BC5-ACF0-B6AEB96846F6","key":"k","occurredAt":"2026-11-25T10:00:00.001Z","type":"APNSMessagePlanned","version":1}
        """#

    @Test("other writers' JSON: whitespace, any key order, escapes, nulls, dates without milliseconds, unknown members")
    func otherWriters() throws {
        try Self.expectSameValue(Array(Self.sample.utf8), as: APNSMessagePlanned.self)
        let read = try EventEnvelope<APNSMessagePlanned>.read(Array(Self.sample.utf8))
        #expect(read.payload.payload == #"{"aps":{"alert":"café 😀 a/b"}}"#)
        #expect(read.payload.collapseId == nil)
        #expect(read.metadata.causationId == nil)
        // Reordered, pretty-printed by another encoder.
        let pretty = JSONEncoder()
        pretty.outputFormatting = [.prettyPrinted]
        pretty.dateEncodingStrategy = .iso8601
        var values = Values(state: 4)
        var envelope = values.envelope(values.fcm())
        envelope.metadata.occurredAt = Date(timeIntervalSince1970: 1_795_000_000)
        envelope.payload.validUntil = Date(timeIntervalSince1970: 1_795_000_001)
        envelope.payload.plannedAt = Date(timeIntervalSince1970: 1_795_000_002)
        envelope.payload.notBefore = nil
        try Self.expectSameValue(
            Array(try pretty.encode(EventEnvelope<FCMMessagePlanned>.Wire(metadata: envelope.metadata, data: envelope.payload))), as: FCMMessagePlanned.self)
    }

    @Test(
        "what the reader leaves to the decoder, and the decoder still decides",
        arguments: [
            ("a key twice", #""attempt":1,"#, #""attempt":1,"attempt":2,"#),
            ("a fraction for an integer", #""priority":10"#, #""priority":10.0"#),
            ("a leading zero", #""priority":10"#, #""priority":010"#),
            ("an exponent", #""priority":10"#, #""priority":1e1"#),
            ("an integer too large", #""priority":10"#, #""priority":99999999999999999999"#),
            ("a missing member", #""topic":"com.example","#, ""),
            ("a string for an integer", #""priority":10"#, #""priority":"10""#),
            ("a day that does not exist", #""validUntil":"2026-11-26T10:00:00.250Z""#, #""validUntil":"2026-02-30T10:00:00Z""#),
            ("microseconds", #""validUntil":"2026-11-26T10:00:00.250Z""#, #""validUntil":"2026-11-26T10:00:00.250123Z""#),
            ("a time zone offset", #""validUntil":"2026-11-26T10:00:00.250Z""#, #""validUntil":"2026-11-26T11:00:00.250+01:00""#),
            ("a lone surrogate", #"caf\u00e9"#, #"caf\udc00"#),
            ("a raw control character", #""registrationToken":"t""#, "\"registrationToken\":\"t\u{1}\""),
            ("invalid UTF-8", #""registrationToken":"t""#, "\"registrationToken\":\"t\u{FFFF}\""),
            ("trailing bytes", #""version":1}"#, #""version":1}x"#),
            ("a null for a required member", #""topic":"com.example""#, #""topic":null"#),
            ("a UUID without dashes", #""2B6499A8-9D43-4BC5-ACF0-B6AEB96846F6""#, #""2B6499A89D434BC5ACF0B6AEB96846F6""#),
            ("a UUID with a letter that is not hex", #""2B6499A8-9D43-4BC5-ACF0-B6AEB96846F6""#, #""2B6499A8-9D43-4BC5-ACF0-B6AEB96846FG""#),
            ("a key with an escape", #""topic":"com.example""#, #""t\u006fpic":"com.example""#),
            ("a key with an escape, next to the plain key", #""topic":"com.example""#, #""topic":"com.example","t\u006fpic":"com.other""#),
        ])
    func leftToDecoder(_ problem: String, _ original: String, _ replacement: String) throws {
        #expect(Self.sample.contains(original))
        var bytes = Array(Self.sample.replacingOccurrences(of: original, with: replacement).utf8)
        if problem == "invalid UTF-8" {
            // U+FFFF is EF BF BF; make it an invalid sequence.
            let at = bytes.firstIndex(of: 0xEF)!
            bytes[at + 1] = 0x41
        }
        #expect(throws: EventJSONReader.Unsupported.self) { try EventEnvelope<APNSMessagePlanned>.read(bytes) }
        // The sender's decoder gives what the Codable decoder alone gives.
        let alone = Result { try Self.decoded(bytes, as: APNSMessagePlanned.self) }
        switch (Result { () throws(EventDecodingError) in try APNSMessagePlanned.decodeRecord(bytes) }, alone) {
        case (.success(.known(let message, let metadata)), .success(let (payload, expected))):
            #expect(message == payload)
            #expect(metadata == expected)
        case (.failure, .failure):
            break
        case (let ours, let theirs):
            Issue.record("\(problem): the sender's decoder gave \(ours), the Codable decoder \(theirs)")
        }
    }

    static let key: [UInt8] = (0..<32).map { UInt8($0 * 7 & 0xff) }

    @Test("a sealed message record: neither the token nor the content in its bytes; opened by its key only, for its own message only; a retry keeps the box")
    func sealedRecord() throws {
        var values = Values(state: 9)
        let plain = values.fcm()
        let sealed = try plain.sealed(subjectId: values.uuid(), key: Self.key)
        let bytes = EventEnvelope(key: "k", payload: sealed).encoded(writing: sealed)
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#""version":2"#) && text.contains(#""sealed":"#) && text.contains(TokenDigest.of(plain.registrationToken)))
        #expect(!text.contains(#""registrationToken""#) && !text.contains(#""message":""#))

        guard case .known(let read, let metadata) = try FCMMessagePlanned.decodeRecord(bytes) else {
            Issue.record("a sealed record is not read")
            return
        }
        #expect(metadata.version == 2 && read.registrationToken.isEmpty && read.message.isEmpty && read.sealing == sealed.sealing)
        let opened = try #require(read.opened(with: Self.key))
        #expect(opened.registrationToken == plain.registrationToken && opened.message == plain.message)
        #expect(read.opened(with: SubjectKeyStub.other) == nil, "another subject's key")
        var moved = read
        moved.messageId = values.uuid()
        #expect(moved.opened(with: Self.key) == nil, "the box moved into another message's record")

        // A retry (attempt + 1, notBefore) written from the opened message carries the same box.
        var retry = opened
        retry.attempt += 1
        retry.notBefore = Date(timeIntervalSince1970: 1_800_000_000)
        let retried = String(decoding: EventEnvelope(key: "k", payload: retry).encoded(writing: retry), as: UTF8.self)
        #expect(retried.contains(sealed.sealing!.sealed) && !retried.contains(#""registrationToken""#))

        // Version 1 records (token and content in clear) are still read.
        let v1 = text.replacingOccurrences(of: #""version":2"#, with: #""version":1"#)
        #expect(throws: Never.self) { try FCMMessagePlanned.decodeRecord(Array(v1.utf8)) }
        guard case .known(let old, _) = try FCMMessagePlanned.decodeRecord(Array(EventEnvelope(key: "k", payload: plain).encoded(writing: plain))) else {
            Issue.record("a record in clear is not read")
            return
        }
        #expect(old.sealing == nil && old.registrationToken == plain.registrationToken && old.message == plain.message)
        #expect(old.opened(with: Self.key)?.message == plain.message, "a record in clear opens as it is")
    }

    @Test("escapes at every offset of the writer's eight-byte scan, between runs of plain and non-ASCII bytes: the encoder's bytes")
    func escapesAtEveryOffset() throws {
        var values = Values(state: 12)
        for special in ["\"", "\\", "\u{0}", "\n", "\u{1f}", "é", "😀", "\u{7f}"] {
            for before in 0..<20 {
                for after in [0, 1, 7, 8, 9, 17] {
                    let text = String(repeating: "a", count: before) + special + String(repeating: "b", count: after)
                    try Self.expectSameBytes(
                        values.envelope(MessageSent(message: values.reference(), providerMessageId: text, attempts: 1, sentAt: values.date())))
                }
            }
        }
    }

    @Test("nonces drawn in blocks: every one of 3 blocks' worth distinct, 12 bytes each, and a box sealed with one opens")
    func sealNonces() throws {
        var nonces = SealNonces(count: 100)
        let drawn = (0..<300).map { _ in Array(nonces.take()) }
        #expect(drawn.allSatisfy { $0.count == 12 })
        #expect(Set(drawn).count == 300, "a nonce repeated")
        var values = Values(state: 11)
        let plain = values.apns()
        let sealed = try plain.sealed(subjectId: values.uuid(), key: Self.key, nonce: nonces.take())
        #expect(sealed.opened(with: Self.key)?.payload == plain.payload)
    }

    enum SubjectKeyStub {
        static let other: [UInt8] = Array(repeating: 1, count: 32)
    }

    @Test("a version-1 result names the device by its token: read (hand-written and Codable) as the token's digest; version 2 writes no token")
    func resultVersions() throws {
        let v1 =
            #"{"causationId":null,"correlationId":"d","data":{"attempts":1,"message":{"appId":"5D76E9B2-6E0E-4205-9A03-8178AEF77AF4","#
            + #""deliveryId":"d","messageId":"239802AA-B5A1-8AB0-A59B-36BF6E8D10C7","platform":"ios","registrationToken":"secret-token"},"#
            + #""providerMessageId":"p","sentAt":"2026-11-22T10:00:00.125Z"},"id":"3f0c2a7e-5b1d-4c8e-9a64-0d2f7c1b9e55","key":"k","occurredAt":"2026-11-22T10:00:00.125Z","#
            + #""type":"MessageSent","version":1}"#
        let digest = TokenDigest.of("secret-token")
        #expect(try EventEnvelope<MessageSent>.read(Array(v1.utf8)).payload.message.tokenDigest == digest)
        let codable = try EventJSON.decoder.decode(EventEnvelope<MessageSent>.Wire.self, from: Data(v1.utf8))
        #expect(codable.data.message.tokenDigest == digest)

        let written = EventEnvelope(key: "k", payload: codable.data).encoded(writing: codable.data)
        let text = String(decoding: written, as: UTF8.self)
        #expect(text.contains(#""version":2"#) && text.contains(#""tokenDigest":"\#(digest)""#))
        #expect(!text.contains("secret-token") && !text.contains("registrationToken"))
    }

    @Test("throttlePerSecond: a record without it (planned before it existed) reads as unthrottled; with it, its value")
    func throttleMember() throws {
        let old = try EventEnvelope<APNSMessagePlanned>.read(Array(Self.sample.utf8))
        #expect(old.payload.throttlePerSecond == nil)
        let throttled = Self.sample.replacingOccurrences(of: #""topic":"com.example","#, with: #""throttlePerSecond":25,"topic":"com.example","#)
        #expect(try EventEnvelope<APNSMessagePlanned>.read(Array(throttled.utf8)).payload.throttlePerSecond == 25)
        var written = old.payload
        written.throttlePerSecond = 25
        let bytes = EventEnvelope(key: "k", payload: written).encoded(writing: written)
        #expect(String(decoding: bytes, as: UTF8.self).contains(#""throttlePerSecond":25"#))
        #expect(!String(decoding: EventEnvelope(key: "k", payload: old.payload).encoded(writing: old.payload), as: UTF8.self).contains("throttle"))
    }

    @Test("a subscription's params as PostgreSQL prints its jsonb: read as JSONDecoder reads them; what the fast path leaves is nil")
    func paramsText() throws {
        var values = Values(state: 7)
        let keys = ["city", "points", "vip", "né", "segment 2", "😀"]
        for _ in 0..<500 {
            var params: [String: String] = [:]
            for key in keys where Bool.random(using: &values) { params[key] = values.text() }
            // jsonb's own spelling: ", " and ": " between members, escapes as JSON writes them.
            let members = try params.map { key, value in
                String(decoding: try JSONEncoder().encode(key), as: UTF8.self) + ": " + String(decoding: try JSONEncoder().encode(value), as: UTF8.self)
            }
            let text = "{" + members.joined(separator: ", ") + "}"
            #expect(EventJSONReader.stringMembers(of: text) == params, "\(text)")
            #expect(try JSONDecoder().decode([String: String].self, from: Data(text.utf8)) == params)
        }
        for text in [#"{"a": 1}"#, #"{"a": "x", "a": "y"}"#, #"{"a": "x"} x"#, #"{"\u0061": "x"}"#, #"["a"]"#, ""] {
            #expect(EventJSONReader.stringMembers(of: text) == nil, "\(text)")
        }
    }

    @Test("the sender's decoder: its own type read, another type or version unknown, a broken record an error naming the problem")
    func senderDecoder() throws {
        guard case .known(let message, let metadata) = try APNSMessagePlanned.decodeRecord(Array(Self.sample.utf8)) else {
            Issue.record("the sample is not read as an APNSMessagePlanned")
            return
        }
        #expect(message.registrationToken == "t")
        #expect(metadata.type == "APNSMessagePlanned")

        for (original, replacement) in [(#""version":1"#, #""version":3"#), (#""type":"APNSMessagePlanned""#, #""type":"FCMMessagePlanned""#)] {
            let other = Array(Self.sample.replacingOccurrences(of: original, with: replacement).utf8)
            guard case .unknown(let metadata) = try APNSMessagePlanned.decodeRecord(other) else {
                Issue.record("\(replacement): not unknown")
                continue
            }
            #expect(replacement.contains(metadata.type) || replacement.contains("\(metadata.version)"))
        }
        // The FCM sender's decoder does not take an APNs message for its own.
        if case .known = try FCMMessagePlanned.decodeRecord(Array(Self.sample.utf8)) { Issue.record("an APNs message read as FCM") }

        let broken = Array(Self.sample.replacingOccurrences(of: #""topic":"com.example""#, with: #""topic":7"#).utf8)
        let error = #expect(throws: EventDecodingError.self) { try APNSMessagePlanned.decodeRecord(broken) }
        #expect(error?.reason == .invalidPayload)
        #expect(error?.description.contains("topic") == true, "\(String(describing: error))")
        #expect(throws: EventDecodingError.self) { try APNSMessagePlanned.decodeRecord(Array("not json".utf8)) }
    }
}

@Suite("Event ids")
struct RandomUUIDTests {
    @Test("UUID(text:) reads what UUID(uuidString:) reads in any case, and refuses anything but 8-4-4-4-12 hex digits")
    func textParsing() {
        let texts = (0..<2_000).flatMap { _ in
            let text = UUID().uuidString
            return [text, text.lowercased(), String(text.enumerated().map { $0.offset % 3 == 0 ? Character($0.element.lowercased()) : $0.element })]
        }
        for text in texts + ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"] {
            #expect(UUID(text: Substring(text)) == UUID(uuidString: text), "\(text)")
        }
        // Foundation's sscanf also takes some of these (a leading space, a 37th digit); the
        // tracking URL checked the length first, and the hand-written reader takes none.
        let valid = "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F6"
        let refused = [
            "", String(valid.dropLast()), valid + "0", valid.replacingOccurrences(of: "-", with: "+"), "6B6499A89-D43-4BC5-ACF0-B6AEB96846F6",
            "6B6499A8-9D43-4BC5-ACF0-B6AEB96846FG", "6B6499A8-9D43-4BC5-ACF0-B6AEB96846F\u{e9}", " 6B6499A8-9D43-4BC5-ACF0-B6AEB96846F",
        ]
        for text in refused {
            #expect(UUID(text: Substring(text)) == nil, "\(text)")
        }
    }

    @Test("lowercaseText is Foundation's uuidString lower-cased, for 10,000 ids and the extremes")
    func lowercaseText() {
        var ids = (0..<10_000).map { _ in UUID() }
        ids.append(UUID(uuid: (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)))
        ids.append(UUID(uuid: (255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255)))
        for id in ids where id.lowercaseText != id.uuidString.lowercased() {
            Issue.record("\(id.uuidString): \(id.lowercaseText)")
        }
    }

    @Test("100,000 ids: all distinct, each a version 4 UUID of the RFC 4122 variant")
    func distinctVersion4() {
        var seen = Set<UUID>()
        for _ in 0..<100_000 {
            let id = RandomUUID.make()
            #expect(id.uuid.6 >> 4 == 4)
            #expect(id.uuid.8 >> 6 == 0b10)
            seen.insert(id)
        }
        #expect(seen.count == 100_000)
        // Not a constant or a counter: the bits vary across the whole id.
        #expect(Set(seen.map { $0.uuid.0 }).count > 200)
        #expect(Set(seen.map { $0.uuid.15 }).count > 200)
    }

    @Test("Random bytes: 20,000 data keys of 32 bytes all distinct, requests that cross the 4 KiB pool's end whole, every byte value drawn")
    func randomBytes() {
        var keys = Set<[UInt8]>()
        for _ in 0..<20_000 {
            let key = RandomBytes.make(count: 32)
            #expect(key.count == 32)
            keys.insert(key)
        }
        #expect(keys.count == 20_000)
        // Sizes that do not divide the pool: some requests straddle a refill.
        var counts = [Int](repeating: 0, count: 256)
        for size in [1, 7, 4_095, 4_096, 4_097, 10_000] {
            let bytes = RandomBytes.make(count: size)
            #expect(bytes.count == size)
            for byte in bytes { counts[Int(byte)] += 1 }
        }
        #expect(counts.allSatisfy { $0 > 0 })
        // A long run is not a repeated pool: two 8 KiB draws differ.
        #expect(RandomBytes.make(count: 8_192) != RandomBytes.make(count: 8_192))
    }

    @Test("whole milliseconds are written as they are, read back equal and rewritten unchanged, for 100,000 consecutive ones")
    func wholeMilliseconds() throws {
        // A `Date` of a whole millisecond is a `Double` that is often a hair below it (the
        // admin API's own event times are such); written truncated as it was, half of them came
        // out one millisecond early, and a projection's `updated_at` never reached the time the
        // admin API waited for.
        let seconds = Date.ISO8601FormatStyle()
        let start: Int64 = 1_796_042_447_000
        var early = 0
        for milliseconds in start..<(start + 100_000) {
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            let text = EventJSONWriter.dateText(date)
            let whole = seconds.format(Date(timeIntervalSince1970: Double(milliseconds / 1000)))
            let expected = whole.dropLast() + "." + String(String(milliseconds % 1000 + 1000).dropFirst()) + "Z"
            if text != expected { early += 1 }
            var reader = EventJSONReader(Array("\"\(text)\"".utf8))
            let read = try reader.date()
            #expect(EventJSONWriter.dateText(read) == text)
            #expect(abs(read.timeIntervalSince1970 * 1000 - Double(milliseconds)) < 0.001)
        }
        #expect(early == 0, "\(early) of 100,000 written other than their millisecond")
        // Below a millisecond, truncated: .1449 is .144, and a microsecond short of .145 too.
        #expect(EventJSONWriter.dateText(Date(timeIntervalSince1970: 1_796_042_447.1449)) == "2026-11-30T12:40:47.144Z")
        #expect(EventJSONWriter.dateText(Date(timeIntervalSince1970: 1_796_042_447.144_999)) == "2026-11-30T12:40:47.144Z")
        #expect(EventJSONWriter.dateText(Date(timeIntervalSince1970: -0.001)) == "1969-12-31T23:59:59.999Z")
        // What the Codable path writes is the same text.
        let encoded = try EventJSON.encoder.encode([Date(timeIntervalSince1970: 1_796_042_447.144)])
        #expect(String(decoding: encoded, as: UTF8.self) == "[\"2026-11-30T12:40:47.144Z\"]")
    }
}
