import Foundation
import PushWire

/// The `id` of a tracking hit, `GET /r/?id=<letter><messageId>,<deliveryId>,<tagId>`, exactly as
/// the Campaign SDKs send it (docs/tracking.md):
///
/// - one leading letter, a content-type letter (the SDKs always send `h`; any ASCII letter is
///   accepted and otherwise ignored);
/// - the message id: a UUID in any case, or a decimal broadLog id written as hex (1–8 digits:
///   32-bit two's complement, so `d7e15e5c` is -673096100; 9–16 digits: 64-bit two's complement);
/// - the delivery id, copied verbatim (1–255 bytes, no commas, no control characters);
/// - the tag id: 1 = received (impression), 2 = opened/clicked, any other 32-bit integer kept
///   as `other`.
package struct TrackingURL: Sendable, Hashable {
    /// The message a hit is about, in the form the payload's `_mId` had.
    package enum MessageID: Sendable, Hashable {
        case uuid(UUID)
        /// A broadLog id (Campaign's decimal message id).
        case decimal(Int64)

        /// The id as stored and used as the Kafka key: a lowercase UUID, or the decimal id.
        package var normalized: String {
            switch self {
            case .uuid(let uuid): uuid.lowercaseText
            case .decimal(let id): String(id)
            }
        }

        package var form: TrackingMessageIDForm {
            switch self {
            case .uuid: .uuid
            case .decimal: .decimal
            }
        }
    }

    /// The longest accepted delivery id, in UTF-8 bytes. Campaign's are short hex strings and
    /// upstream request ids are short too; anything longer is not an id the channel issued.
    package static let maximumDeliveryIDLength = 255

    package var contentLetter: Character
    package var messageID: MessageID
    package var deliveryID: String
    package var tagID: Int32

    package var kind: TrackingKind { TrackingKind(tagID: tagID) }

    package init(contentLetter: Character = "h", messageID: MessageID, deliveryID: String, tagID: Int32) {
        self.contentLetter = contentLetter
        self.messageID = messageID
        self.deliveryID = deliveryID
        self.tagID = tagID
    }

    /// Reads the `id` parameter of a raw (percent-encoded) query string, such as
    /// `id=hd828,deliveryId,2`. The first `id` wins; other parameters are ignored.
    package init(query: String) throws(TrackingURLError) {
        var raw: Substring?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let (name, value) = pair.firstIndex(of: "=").map { (pair[..<$0], pair[pair.index(after: $0)...]) } ?? (pair, "")
            if name == "id" {
                raw = value
                break
            }
        }
        guard let raw, !raw.isEmpty else {
            throw TrackingURLError(.missingID, "the id parameter is missing: expected ?id=<letter><messageId>,<deliveryId>,<tagId>")
        }
        // The SDKs send the commas as they are; a proxy or client library may encode them.
        guard raw.utf8.contains(UInt8(ascii: "%")) else {
            try self.init(id: String(raw))
            return
        }
        guard let decoded = String(raw).removingPercentEncoding else {
            throw TrackingURLError(.malformedID, "the id parameter is not valid percent-encoded UTF-8")
        }
        try self.init(id: decoded)
    }

    /// Reads a decoded `id` value, such as `hd828,deliveryId,2`.
    package init(id: String) throws(TrackingURLError) {
        let parts = id.split(separator: ",", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw TrackingURLError(
                .malformedID,
                "the id must be <letter><messageId>,<deliveryId>,<tagId> (three parts separated by commas); found \(parts.count) part\(parts.count == 1 ? "" : "s")"
            )
        }
        let first = parts[0]
        guard let letter = first.first, letter.isASCII, letter.isLetter else {
            throw TrackingURLError(
                .contentLetter,
                first.isEmpty
                    ? "the id is empty before the first comma: expected a letter and a messageId"
                    : "the id must start with a letter (the SDKs send h), not \(Self.quoted(first.prefix(1)))")
        }
        contentLetter = letter
        messageID = try Self.messageID(first.dropFirst())
        deliveryID = try Self.deliveryID(parts[1])
        tagID = try Self.tagID(parts[2])
    }

    static func messageID(_ text: Substring) throws(TrackingURLError) -> MessageID {
        guard !text.isEmpty else {
            throw TrackingURLError(.messageID, "the messageId is empty: expected a UUID or a hex broadLog id after the letter")
        }
        if text.contains("-") {
            guard let uuid = UUID(text: text) else {
                throw TrackingURLError(.messageID, "the messageId \(quoted(text)) is not a UUID")
            }
            return .uuid(uuid)
        }
        guard text.utf8.allSatisfy({ $0.isHexDigit }) else {
            throw TrackingURLError(.messageID, "the messageId \(quoted(text)) is neither a UUID nor a hex broadLog id")
        }
        switch text.utf8.count {
        case 1...8:
            // Java's Integer.toHexString: negative ids arrive as 32-bit two's complement.
            return .decimal(Int64(Int32(bitPattern: UInt32(text, radix: 16)!)))
        case 9...16:
            // Long.toHexString, for ids beyond 32 bits.
            return .decimal(Int64(bitPattern: UInt64(text, radix: 16)!))
        default:
            throw TrackingURLError(.messageID, "the messageId \(quoted(text)) has more than 16 hex digits: not a 64-bit broadLog id")
        }
    }

    static func deliveryID(_ text: Substring) throws(TrackingURLError) -> String {
        guard !text.isEmpty else {
            throw TrackingURLError(.deliveryID, "the deliveryId (second part) is empty")
        }
        guard text.utf8.count <= maximumDeliveryIDLength else {
            throw TrackingURLError(.deliveryID, "the deliveryId is longer than \(maximumDeliveryIDLength) bytes")
        }
        // ASCII (every id the channel issues): a control is below 0x20 or 0x7F; otherwise ask
        // Unicode (C1 controls, U+0080 to U+009F, are controls too).
        let isASCII = text.utf8.allSatisfy { $0 < 0x80 }
        let hasControl =
            isASCII
            ? text.utf8.contains { $0 < 0x20 || $0 == 0x7F }
            : text.unicodeScalars.contains { $0.properties.generalCategory == .control }
        guard !hasControl else {
            throw TrackingURLError(.deliveryID, "the deliveryId contains control characters")
        }
        return String(text)
    }

    static func tagID(_ text: Substring) throws(TrackingURLError) -> Int32 {
        guard !text.isEmpty else {
            throw TrackingURLError(.tagID, "the tagId (third part) is empty: expected 1 (received) or 2 (opened)")
        }
        let digits = text.first == "-" ? text.dropFirst() : text
        guard !digits.isEmpty, digits.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            throw TrackingURLError(.tagID, "the tagId \(quoted(text)) is not an integer: expected 1 (received) or 2 (opened)")
        }
        guard let tag = Int32(text) else {
            throw TrackingURLError(.tagID, "the tagId \(quoted(text)) is out of range (32-bit integers only)")
        }
        return tag
    }

    /// Echoes at most 40 characters of the input, so a reason stays one short line.
    static func quoted(_ text: Substring) -> String {
        let cleaned = String(text.prefix(40).unicodeScalars.map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        return "\"\(cleaned)\(text.count > 40 ? "…" : "")\""
    }
}

/// What a hit says happened to the notification.
package enum TrackingKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// Tag 1: received/displayed (an impression).
    case received
    /// Tag 2: opened or clicked (Android's current SDK also sends 2 when it is dismissed).
    case opened
    /// Any other tag, recorded with its number.
    case other

    package init(tagID: Int32) {
        switch tagID {
        case 1: self = .received
        case 2: self = .opened
        default: self = .other
        }
    }
}

/// How the message id was written in the payload's `_mId`.
package enum TrackingMessageIDForm: String, Sendable, Hashable, Codable {
    case uuid
    case decimal
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (self >= UInt8(ascii: "0") && self <= UInt8(ascii: "9")) || (self >= UInt8(ascii: "a") && self <= UInt8(ascii: "f"))
            || (self >= UInt8(ascii: "A") && self <= UInt8(ascii: "F"))
    }
}
