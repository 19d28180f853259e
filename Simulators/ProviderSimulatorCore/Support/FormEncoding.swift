/// `application/x-www-form-urlencoded` decoding, for query strings and the OAuth token form.
package enum FormEncoding {
    package static func decode<S: StringProtocol>(_ text: S) -> [String: String] {
        var result: [String: String] = [:]
        for pair in text.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = self.percentDecode(parts[0])
            let value = parts.count > 1 ? self.percentDecode(parts[1]) : ""
            result[name] = value
        }
        return result
    }

    package static func percentDecode<S: StringProtocol>(_ text: S) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                if let high = iterator.next(), let low = iterator.next(),
                    let value = UInt8(String(decoding: [high, low], as: UTF8.self), radix: 16)
                {
                    bytes.append(value)
                }
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
