import Foundation

/// A domain event that travels in an `EventEnvelope`: its wire name and schema version.
///
/// The type string is part of the Kafka contract (see docs/events.md); it is never derived from
/// the Swift type name, so renaming a Swift type cannot break consumers.
public protocol PushEvent: Codable, Sendable {
    /// The `type` field on the wire, such as `SubscriptionRegistered`.
    static var eventType: String { get }
    /// The schema version this Swift type encodes. Older versions are read through upcasters.
    static var eventVersion: Int { get }
}

/// The envelope fields every event carries, whatever its payload.
public struct EventMetadata: Codable, Sendable, Hashable {
    /// Unique per event; consumers may use it to recognise a re-delivered event.
    public var id: UUID
    public var type: String
    public var version: Int
    public var occurredAt: Date
    /// The aggregate the event belongs to; also the Kafka record key (events of one aggregate
    /// stay ordered in one partition).
    public var key: String
    /// The request or delivery this event belongs to, carried along the whole flow.
    public var correlationId: String?
    /// The id of the event or command that caused this one.
    public var causationId: String?

    public init(
        id: UUID = UUID(), type: String, version: Int, occurredAt: Date = Date(), key: String,
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
public struct EventEnvelope<Payload: PushEvent>: Sendable {
    public var metadata: EventMetadata
    public var payload: Payload

    public init(
        key: String, payload: Payload, id: UUID = UUID(), occurredAt: Date = Date(),
        correlationId: String? = nil, causationId: String? = nil
    ) {
        self.metadata = EventMetadata(
            id: id, type: Payload.eventType, version: Payload.eventVersion, occurredAt: occurredAt,
            key: key, correlationId: correlationId, causationId: causationId
        )
        self.payload = payload
    }

    public init(metadata: EventMetadata, payload: Payload) {
        self.metadata = metadata
        self.payload = payload
    }

    /// The JSON bytes of the envelope.
    public func encoded() throws -> [UInt8] {
        Array(try EventJSON.encoder.encode(Wire(metadata: metadata, data: payload)))
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

/// The JSON conventions of every event: ISO 8601 UTC timestamps with milliseconds on output,
/// with or without fractional seconds on input; sorted keys so equal events are equal bytes.
public enum EventJSON {
    /// One encoder and one decoder for the process: their configuration never changes after this,
    /// and encoding or decoding with them from several threads at once is safe. (Making one per
    /// event cost the senders measurable CPU per message.)
    public static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(date.formatted(Self.withFraction))
        }
        return encoder
    }()

    public static let decoder: JSONDecoder = {
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
