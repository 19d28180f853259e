/// The fields of an `application/x-www-form-urlencoded` body or query string, decoded the way
/// the Campaign SDKs encode them: `%XX` escapes (UTF-8) and `+` as a space.
package struct FormFields: Sendable, Hashable {
    package private(set) var values: [String: String] = [:]

    package init() {}

    /// Parses `a=1&b=x%20y`. A field without `=` has an empty value; the last of repeated names
    /// wins. Malformed escapes are an error naming the field. Scans UTF-8 bytes (splitting the
    /// string by `Character` cost a grapheme breaker per byte: 7 % of a registration's CPU).
    package init(encoded: some StringProtocol) throws(RegistrationError) {
        let bytes = Array(encoded.utf8)
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            if end > start {
                let pair = bytes[start..<end]
                let equals = pair.firstIndex(of: UInt8(ascii: "="))
                let name = try Self.decode(pair[..<(equals ?? end)], field: nil)
                values[name] = try equals.map { equals throws(RegistrationError) in try Self.decode(pair[(equals + 1)...], field: name) } ?? ""
            }
            start = end + 1
        }
    }

    package subscript(name: String) -> String? { values[name] }

    /// Fields of `other` fill in names this one lacks (the body wins over the query string).
    package func filling(from other: FormFields) -> FormFields {
        var merged = self
        merged.values.merge(other.values) { mine, _ in mine }
        return merged
    }

    static func decode(_ text: ArraySlice<UInt8>, field: String?) throws(RegistrationError) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var iterator = text.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(Self.hexValue), let low = iterator.next().flatMap(Self.hexValue) else {
                    throw .badRequest("malformed percent-encoding in \(field.map { "field \($0)" } ?? "a field name")")
                }
                bytes.append(high << 4 | low)
            default:
                bytes.append(byte)
            }
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw .badRequest("\(field.map { "field \($0)" } ?? "a field name") is not valid UTF-8")
        }
        // PostgreSQL text cannot hold NUL: refused here rather than stored in an event no
        // projection can write.
        guard !bytes.contains(0) else {
            throw .badRequest("\(field.map { "field \($0)" } ?? "a field name") contains a NUL character (%00)")
        }
        return decoded
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
