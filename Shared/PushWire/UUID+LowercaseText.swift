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
