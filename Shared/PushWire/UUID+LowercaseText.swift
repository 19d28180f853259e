import Foundation

extension UUID {
    /// The UUID as 36 lower-case characters (`uuidString.lowercased()`, the form of every key,
    /// id header (`apns-id`) and causation id the project writes), without Foundation's
    /// `snprintf` and the second string `lowercased()` makes: senders format three or four per
    /// notification.
    package var lowercaseText: String {
        String(unsafeUninitializedCapacity: 36) { text in
            var position = 0
            forEachTextByte(digits: "0123456789abcdef") { byte in
                text[position] = byte
                position += 1
            }
            return position
        }
    }

    /// Gives the 36 bytes of the UUID's text (8-4-4-4-12 hex digits, taken from `digits`) in
    /// order: `lowercaseText` and `EventJSONWriter.uuid` (upper case, as the encoder writes).
    @inlinable @inline(__always)
    package func forEachTextByte(digits: StaticString, _ body: (UInt8) -> Void) {
        withUnsafeBytes(of: uuid) { uuid in
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 { body(UInt8(ascii: "-")) }
                let byte = uuid[index]
                body(digits.utf8Start[Int(byte >> 4)])
                body(digits.utf8Start[Int(byte & 0x0F)])
            }
        }
    }
}

extension UUID {
    /// Reads the 36-character form (8-4-4-4-12 hex digits, either case) from its UTF-8 bytes, as
    /// `UUID(uuidString:)` reads such a text, without Foundation's `sscanf`: the senders read
    /// several per message record (`EventJSONReader`), the tracking service one per hit.
    @inlinable
    package init?<Bytes: Collection>(utf8 text: Bytes) where Bytes.Element == UInt8 {
        guard text.count == 36 else { return nil }
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        let parsed = withUnsafeMutableBytes(of: &uuid) { uuid -> Bool in
            var position = text.startIndex
            func nibble() -> UInt8? {
                let byte = text[position]
                position = text.index(after: position)
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
                default: return nil
                }
            }
            for index in 0..<16 {
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    guard text[position] == UInt8(ascii: "-") else { return false }
                    position = text.index(after: position)
                }
                guard let high = nibble(), let low = nibble() else { return false }
                uuid[index] = high << 4 | low
            }
            return true
        }
        guard parsed else { return nil }
        self.init(uuid: uuid)
    }

    /// `init(utf8:)` of a text.
    package init?(text: Substring) {
        self.init(utf8: text.utf8)
    }
}
