import Foundation

/// A domain event that travels in an `EventEnvelope`: its wire name and schema version.
///
/// The type string is part of the Kafka contract (see docs/events.md); it is never derived from
/// the Swift type name, so renaming a Swift type cannot break consumers.
package protocol PushEvent: Codable, Sendable {
    /// The `type` field on the wire, such as `SubscriptionRegistered`.
    static var eventType: String { get }
    /// The schema version this Swift type encodes. Older versions are read through upcasters.
    static var eventVersion: Int { get }
}

/// The envelope fields every event carries, whatever its payload.
package struct EventMetadata: Codable, Sendable, Hashable {
    /// Unique per event; consumers may use it to recognise a re-delivered event.
    package var id: UUID
    package var type: String
    package var version: Int
    package var occurredAt: Date
    /// The aggregate the event belongs to; also the Kafka record key (events of one aggregate
    /// stay ordered in one partition).
    package var key: String
    /// The request or delivery this event belongs to, carried along the whole flow.
    package var correlationId: String?
    /// The id of the event or command that caused this one.
    package var causationId: String?

    package init(
        id: UUID = RandomUUID.make(), type: String, version: Int, occurredAt: Date = Date(), key: String,
        correlationId: String? = nil, causationId: String? = nil
    ) {
        self.id = id
        self.type = type
        self.version = version
        self.occurredAt = occurredAt
        self.key = key
        self.correlationId = correlationId
        self.causationId = causationId
    }
}

/// A versioned JSON envelope: the metadata fields at the top level and the payload under `data`.
///
/// ```json
/// {"id": "…", "type": "SubscriptionRegistered", "version": 1, "occurredAt": "2026-11-22T10:00:00.000Z",
///  "key": "…", "correlationId": null, "causationId": null, "data": {…}}
/// ```
package struct EventEnvelope<Payload: PushEvent>: Sendable {
    package var metadata: EventMetadata
    package var payload: Payload

    package init(
        key: String, payload: Payload, id: UUID = RandomUUID.make(), occurredAt: Date = Date(),
        correlationId: String? = nil, causationId: String? = nil
    ) {
        self.metadata = EventMetadata(
            id: id, type: Payload.eventType, version: Payload.eventVersion, occurredAt: occurredAt,
            key: key, correlationId: correlationId, causationId: causationId
        )
        self.payload = payload
    }

    package init(metadata: EventMetadata, payload: Payload) {
        self.metadata = metadata
        self.payload = payload
    }

    /// The JSON bytes of the envelope.
    package func encoded() throws -> [UInt8] {
        if let payload = payload as? any EventJSONWritable { return encoded(writing: payload) }
        return Array(try EventJSON.encoder.encode(Wire(metadata: metadata, data: payload)))
    }

    /// The same bytes as the encoder's, written by hand (`EventJSONWritable`).
    func encoded(writing payload: some EventJSONWritable) -> [UInt8] {
        var writer = EventJSONWriter()
        writer.object { writer in
            writer.string("causationId", metadata.causationId)
            writer.string("correlationId", metadata.correlationId)
            writer.object("data", payload.writeMembers)
            writer.uuid("id", metadata.id)
            writer.string("key", metadata.key)
            writer.date("occurredAt", metadata.occurredAt)
            writer.string("type", metadata.type)
            writer.int("version", metadata.version)
        }
        return writer.bytes
    }

    /// Reads an envelope whose payload reads itself, or throws `Unsupported` for the decoder to
    /// take over (see `EventJSONReadable`).
    static func read(_ bytes: [UInt8]) throws(EventJSONReader.Unsupported) -> EventEnvelope
    where Payload: EventJSONReadable {
        var reader = EventJSONReader(bytes)
        var members = EnvelopeMembers()
        var payload: Payload?
        try reader.members { reader, member throws(EventJSONReader.Unsupported) in
            if member == "data" {
                try EventJSONReader.once(&payload, try Payload(reading: &reader))
            } else if try !members.read(member, from: &reader) {
                try reader.skipValue()
            }
        }
        try reader.end()
        return EventEnvelope(metadata: try members.metadata(), payload: try EventJSONReader.required(payload))
    }

    struct Wire: Codable {
        var metadata: EventMetadata
        var data: Payload

        enum CodingKeys: String, CodingKey { case data }

        init(metadata: EventMetadata, data: Payload) {
            self.metadata = metadata
            self.data = data
        }

        init(from decoder: any Decoder) throws {
            metadata = try EventMetadata(from: decoder)
            data = try decoder.container(keyedBy: CodingKeys.self).decode(Payload.self, forKey: .data)
        }

        func encode(to encoder: any Encoder) throws {
            try metadata.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(data, forKey: .data)
        }
    }
}

/// The envelope's own members as `EventJSONReader` reads them: shared by the envelope of a
/// payload that reads itself and by `EventMetadata.read`, which skips the payload.
struct EnvelopeMembers {
    var id: UUID?
    var type: String?
    var version: Int?
    var occurredAt: Date?
    var key: String?
    var correlationId: String??
    var causationId: String??

    /// Reads the value of `member` when it is an envelope field; false (nothing read) otherwise.
    mutating func read(_ member: EventJSONReader.Key, from reader: inout EventJSONReader) throws(EventJSONReader.Unsupported) -> Bool {
        switch member {
        case "id": try EventJSONReader.once(&id, try reader.uuid())
        case "type": try EventJSONReader.once(&type, try reader.string())
        case "version": try EventJSONReader.once(&version, try reader.int())
        case "occurredAt": try EventJSONReader.once(&occurredAt, try reader.date())
        case "key": try EventJSONReader.once(&key, try reader.string())
        case "correlationId": try EventJSONReader.once(&correlationId, try reader.optionalString())
        case "causationId": try EventJSONReader.once(&causationId, try reader.optionalString())
        default: return false
        }
        return true
    }

    func metadata() throws(EventJSONReader.Unsupported) -> EventMetadata {
        EventMetadata(
            id: try EventJSONReader.required(id), type: try EventJSONReader.required(type), version: try EventJSONReader.required(version),
            occurredAt: try EventJSONReader.required(occurredAt), key: try EventJSONReader.required(key),
            correlationId: correlationId ?? nil, causationId: causationId ?? nil
        )
    }
}

extension EventMetadata {
    /// The envelope fields by the hand-written reader, the payload skipped (its syntax checked,
    /// not its schema), or `Unsupported` for the decoder to take over.
    static func read(_ bytes: [UInt8]) throws(EventJSONReader.Unsupported) -> EventMetadata {
        var reader = EventJSONReader(bytes)
        var members = EnvelopeMembers()
        var sawData = false
        try reader.members { reader, member throws(EventJSONReader.Unsupported) in
            if member == "data" {
                guard !sawData else { throw EventJSONReader.Unsupported() }
                sawData = true
                try reader.skipValue()
            } else if try !members.read(member, from: &reader) {
                try reader.skipValue()
            }
        }
        try reader.end()
        return try members.metadata()
    }
}

/// The JSON conventions of every event: ISO 8601 UTC timestamps with milliseconds on output,
/// with or without fractional seconds on input; sorted keys so equal events are equal bytes.
package enum EventJSON {
    /// One encoder and one decoder for the process: their configuration never changes after this,
    /// and encoding or decoding with them from several threads at once is safe. (Making one per
    /// event cost the senders measurable CPU per message.)
    package static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(EventJSONWriter.dateText(date))
        }
        return encoder
    }()

    package static let decoder: JSONDecoder = {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            if let date = try? Self.withFraction.parse(text) { return date }
            if let date = try? Self.withoutFraction.parse(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date-time: \(text)")
        }
        return decoder
    }()

    static let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
    static let withoutFraction = Date.ISO8601FormatStyle()
}
