import Foundation

extension UUID {
    /// The UUID as 36 lower-case characters (`uuidString.lowercased()`, the form of every key,
    /// id header and causation id the project writes), without Foundation's `snprintf` and the
    /// second string `lowercased()` makes: senders format three or four per notification.
    public var lowercaseText: String {
        let digits: StaticString = "0123456789abcdef"
        return withUnsafeBytes(of: uuid) { uuid in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for index in 0..<16 {
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    let byte = uuid[index]
                    text[position] = digits.utf8Start[Int(byte >> 4)]
                    text[position + 1] = digits.utf8Start[Int(byte & 0x0F)]
                    position += 2
                }
                return position
            }
        }
    }
}
