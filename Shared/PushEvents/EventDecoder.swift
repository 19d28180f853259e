import Foundation

/// What an event record decoded to: an event this consumer understands, or one it does not
/// know (a newer type or version), which it should skip rather than fail on.
package enum DecodedEvent<Event: Sendable>: Sendable {
    case known(Event, EventMetadata)
    case unknown(EventMetadata)

    package var metadata: EventMetadata {
        switch self {
        case .known(_, let metadata), .unknown(let metadata): metadata
        }
    }
}

/// Why a record could not be read as an event. The description names the problem without
/// echoing the record's content, so it is safe for logs and dead-letter headers.
package struct EventDecodingError: Error, Sendable, Hashable, CustomStringConvertible {
    package enum Reason: String, Sendable, Hashable {
        /// Not JSON, or JSON without the envelope fields.
        case malformedEnvelope = "malformed_envelope"
        /// A known type and version whose `data` does not match its schema.
        case invalidPayload = "invalid_payload"
    }

    package var reason: Reason
    package var detail: String

    package init(reason: Reason, detail: String) {
        self.reason = reason
        self.detail = detail
    }

    package var description: String { "\(reason.rawValue): \(detail)" }
}

extension EventMetadata {
    /// Reads only the envelope fields of a record, whatever its type.
    package static func decode(_ bytes: [UInt8]) throws(EventDecodingError) -> EventMetadata {
        // The hand-written reader first (a consumer of several event types reads every record's
        // envelope this way before its payload); what it does not read, the decoder reads or names.
        if let metadata = try? read(bytes) { return metadata }
        do {
            return try EventJSON.decoder.decode(EventMetadata.self, from: Data(bytes))
        } catch {
            throw EventDecodingError(reason: .malformedEnvelope, detail: EventDecoder<Never>.describe(error))
        }
    }
}

/// Decodes envelopes into one Swift type `Event` (usually an enum of a consumer's events).
///
/// Register each known `(type, version)` with the payload type that reads it and how it maps to
/// `Event`; registering an older version with its own payload type and a mapping to the current
/// event is the upcaster. Added fields are ignored; unknown types or versions decode to
/// `.unknown`.
package struct EventDecoder<Event: Sendable>: Sendable {
    private var decoders: [Key: @Sendable ([UInt8]) throws -> (Event, EventMetadata)] = [:]

    private struct Key: Hashable {
        var type: String
        var version: Int
    }

    package init() {}

    /// Reads `Payload.eventType` at `version` (default `Payload.eventVersion`) and maps it.
    package mutating func register<Payload: PushEvent>(
        _ payload: Payload.Type, version: Int = Payload.eventVersion,
        _ transform: @escaping @Sendable (Payload, EventMetadata) -> Event
    ) {
        let read: (@Sendable ([UInt8]) -> (any PushEvent, EventMetadata)?)? =
            if let readable = Payload.self as? any (PushEvent & EventJSONReadable).Type { Self.reader(of: readable) } else { nil }
        decoders[Key(type: Payload.eventType, version: version)] = { bytes in
            // The hand-written reader first; what it does not read, the decoder reads or rejects.
            if let read, let (payload, metadata) = read(bytes), let payload = payload as? Payload {
                return (transform(payload, metadata), metadata)
            }
            let wire = try EventJSON.decoder.decode(EventEnvelope<Payload>.Wire.self, from: Data(bytes))
            return (transform(wire.data, wire.metadata), wire.metadata)
        }
    }

    private static func reader<Payload: PushEvent & EventJSONReadable>(of _: Payload.Type) -> @Sendable ([UInt8]) -> (any PushEvent, EventMetadata)? {
        { bytes in
            guard let envelope = try? EventEnvelope<Payload>.read(bytes) else { return nil }
            return (envelope.payload, envelope.metadata)
        }
    }

    package func decode(_ bytes: [UInt8]) throws(EventDecodingError) -> DecodedEvent<Event> {
        // A consumer of one event type (the senders) parses each record once: the whole envelope
        // as that type, kept only when its type and version are the registered ones. Anything
        // else (another type, a malformed record) takes the two-step path below, which names
        // the problem precisely.
        if self.decoders.count == 1, let (key, decode) = self.decoders.first,
            let (event, metadata) = try? decode(bytes), metadata.type == key.type, metadata.version == key.version
        {
            return .known(event, metadata)
        }
        let metadata = try EventMetadata.decode(bytes)
        guard let decode = decoders[Key(type: metadata.type, version: metadata.version)] else {
            return .unknown(metadata)
        }
        do {
            return .known(try decode(bytes).0, metadata)
        } catch {
            throw EventDecodingError(reason: .invalidPayload, detail: "\(metadata.type) v\(metadata.version): \(Self.describe(error))")
        }
    }

    /// A decoding error as a path and a problem, never the offending value.
    /// A description of a JSON decoding failure that names the field but never echoes the input.
    package static func describe(_ error: any Error) -> String {
        guard let error = error as? DecodingError else { return "not valid JSON" }
        func path(_ context: DecodingError.Context) -> String {
            let components = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
            return components.isEmpty ? "top level" : components.joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context):
            return "missing field \(key.stringValue) at \(path(context))"
        case .typeMismatch(let type, let context):
            return "wrong type at \(path(context)), expected \(type)"
        case .valueNotFound(let type, let context):
            return "null at \(path(context)), expected \(type)"
        case .dataCorrupted(let context):
            return context.codingPath.isEmpty ? "not valid JSON" : "invalid value at \(path(context))"
        @unknown default:
            return "undecodable"
        }
    }
}

/// An event type a consumer of that type alone reads (the senders: one record, one parse).
///
/// `decodeRecord` decodes exactly as an `EventDecoder` with only this type registered, but each
/// conformance's implementation is compiled for its concrete type: through `EventDecoder`'s
/// stored generic closures every record looked up the generic metadata of the envelope and its
/// optionals at run time, about a fifth of the decoding's cost (docs/benchmarks.md).
package protocol SingleEventDecodable: PushEvent, EventJSONReadable {
    static func decodeRecord(_ bytes: [UInt8]) throws(EventDecodingError) -> DecodedEvent<Self>
}

extension SingleEventDecodable {
    /// The fast reader when it reads the whole record as this type and version; otherwise the
    /// same answer as `EventDecoder` (another type or version is `.unknown`, a malformed record
    /// an error naming the problem).
    static func decodeSingle(_ bytes: [UInt8], versions: ClosedRange<Int>? = nil) throws(EventDecodingError) -> DecodedEvent<Self> {
        let versions = versions ?? eventVersion...eventVersion
        if let envelope = try? EventEnvelope<Self>.read(bytes), envelope.metadata.type == eventType, versions.contains(envelope.metadata.version) {
            return .known(envelope.payload, envelope.metadata)
        }
        var decoder = EventDecoder<Self>()
        for version in versions { decoder.register(Self.self, version: version) { payload, _ in payload } }
        return try decoder.decode(bytes)
    }
}

// The message records: version 1 (token and content in clear) and version 2 (sealed, or in
// clear on a retry of a version-1 record) are read by one reader.

extension APNSMessagePlanned: SingleEventDecodable {
    package static func decodeRecord(_ bytes: [UInt8]) throws(EventDecodingError) -> DecodedEvent<Self> { try decodeSingle(bytes, versions: 1...2) }
}

extension FCMMessagePlanned: SingleEventDecodable {
    package static func decodeRecord(_ bytes: [UInt8]) throws(EventDecodingError) -> DecodedEvent<Self> { try decodeSingle(bytes, versions: 1...2) }
}

extension TrackingHitRecorded: SingleEventDecodable {
    package static func decodeRecord(_ bytes: [UInt8]) throws(EventDecodingError) -> DecodedEvent<Self> { try decodeSingle(bytes) }
}
