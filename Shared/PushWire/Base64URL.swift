import Foundation

/// Unpadded base64url (RFC 4648 section 5), as JWTs use it (RFC 7515 section 2): the APNs
/// provider token, the FCM service-account assertion, and the simulators that check both.
package enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    /// The bytes as base64url without padding, encoded directly (no `Data` and no
    /// replacing of `+`, `/` and `=` afterwards).
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var output: [UInt8] = []
        output.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= input.count {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
            output.append(self.alphabet[Int(value >> 18 & 63)])
            output.append(self.alphabet[Int(value >> 12 & 63)])
            output.append(self.alphabet[Int(value >> 6 & 63)])
            output.append(self.alphabet[Int(value & 63)])
            index += 3
        }
        let remaining = input.count - index
        if remaining == 1 {
            let value = UInt32(input[index]) << 16
            output.append(self.alphabet[Int(value >> 18 & 63)])
            output.append(self.alphabet[Int(value >> 12 & 63)])
        } else if remaining == 2 {
            let value = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8
            output.append(self.alphabet[Int(value >> 18 & 63)])
            output.append(self.alphabet[Int(value >> 12 & 63)])
            output.append(self.alphabet[Int(value >> 6 & 63)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// The bytes of base64url text, padded or not; nil when it is not base64url.
    package static func decode(_ text: some StringProtocol) -> Data? {
        var base64 = String(text).replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        let remainder = base64.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { base64 += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: base64)
    }
}
