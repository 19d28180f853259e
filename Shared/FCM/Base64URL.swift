/// Unpadded base64url (RFC 4648 §5), as JWTs use it.
enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: some Collection<UInt8>) -> String {
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
}
