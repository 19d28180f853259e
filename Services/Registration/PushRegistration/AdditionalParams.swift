/// The SDK's `additionalParams` field: a flat XML list of `<param name="K" value="V"/>` under
/// `<additionalParams>` (iOS) or `<additionalParameters>` (Android), with `" />"` or `"/>"`,
/// XML-escaped values. Parsed strictly but generously: both roots, both closings, single or
/// double quotes, attributes in any order, an optional XML declaration, `<param ...></param>`.
package enum AdditionalParams {
    package static func parse(_ xml: String) throws(RegistrationError) -> [String: String] {
        var scanner = Scanner(Array(xml.utf8))
        scanner.skipWhitespace()
        if scanner.isAtEnd { return [:] }
        if scanner.consume("<?") {
            guard scanner.skip(through: "?>") else { throw malformed("unterminated XML declaration") }
            scanner.skipWhitespace()
        }
        guard scanner.consume("<") else { throw malformed("does not start with an element") }
        let root = scanner.name()
        guard root == "additionalParams" || root == "additionalParameters" else {
            throw malformed("root element must be additionalParams or additionalParameters")
        }
        scanner.skipWhitespace()
        var params: [String: String] = [:]
        if scanner.consume("/>") {
            return try finish(&scanner, params)
        }
        guard scanner.consume(">") else { throw malformed("root element is not closed") }
        while true {
            scanner.skipWhitespace()
            if scanner.consume("</") {
                guard scanner.name() == root else { throw malformed("closing tag does not match \(root)") }
                scanner.skipWhitespace()
                guard scanner.consume(">") else { throw malformed("closing tag is not closed") }
                return try finish(&scanner, params)
            }
            guard scanner.consume("<") else { throw malformed("text outside a param element") }
            guard scanner.name() == "param" else { throw malformed("only param elements are allowed") }
            var attributes: [String: String] = [:]
            while true {
                scanner.skipWhitespace()
                if scanner.consume("/>") { break }
                if scanner.consume(">") {
                    scanner.skipWhitespace()
                    guard scanner.consume("</param"),
                        {
                            scanner.skipWhitespace()
                            return scanner.consume(">")
                        }()
                    else {
                        throw malformed("param element is not closed")
                    }
                    break
                }
                let attribute = scanner.name()
                guard !attribute.isEmpty else { throw malformed("malformed param attribute") }
                scanner.skipWhitespace()
                guard scanner.consume("=") else { throw malformed("attribute \(attribute) has no value") }
                scanner.skipWhitespace()
                guard let value = try scanner.quoted() else { throw malformed("attribute \(attribute) is not quoted") }
                attributes[attribute] = value
            }
            guard let name = attributes["name"], !name.isEmpty else { throw malformed("a param has no name") }
            params[name] = attributes["value"] ?? ""
        }
    }

    private static func finish(_ scanner: inout Scanner, _ params: [String: String]) throws(RegistrationError) -> [String: String] {
        scanner.skipWhitespace()
        guard scanner.isAtEnd else { throw malformed("content after the root element") }
        return params
    }

    static func malformed(_ detail: String) -> RegistrationError {
        .badRequest("malformed additionalParams XML: \(detail)")
    }

    /// A byte cursor over the XML text.
    struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var isAtEnd: Bool { position >= bytes.count }

        mutating func skipWhitespace() {
            while position < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[position]) { position += 1 }
        }

        mutating func consume(_ literal: String) -> Bool {
            let literalBytes = Array(literal.utf8)
            guard bytes.count - position >= literalBytes.count,
                bytes[position..<position + literalBytes.count].elementsEqual(literalBytes)
            else { return false }
            position += literalBytes.count
            return true
        }

        mutating func skip(through literal: String) -> Bool {
            while !isAtEnd {
                if consume(literal) { return true }
                position += 1
            }
            return false
        }

        /// An XML name (letters, digits, `_`, `-`, `.`, `:`).
        mutating func name() -> String {
            let start = position
            while position < bytes.count {
                let byte = bytes[position]
                let isNameByte =
                    (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39)
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: ":")
                    || byte >= 0x80
                guard isNameByte else { break }
                position += 1
            }
            return String(decoding: bytes[start..<position], as: UTF8.self)
        }

        /// A quoted attribute value with entities decoded; nil when not quoted.
        mutating func quoted() throws(RegistrationError) -> String? {
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") || bytes[position] == UInt8(ascii: "'") else { return nil }
            let quote = bytes[position]
            position += 1
            var value: [UInt8] = []
            while true {
                guard position < bytes.count else { throw AdditionalParams.malformed("unterminated attribute value") }
                let byte = bytes[position]
                position += 1
                if byte == quote { break }
                if byte == UInt8(ascii: "<") { throw AdditionalParams.malformed("'<' inside an attribute value") }
                if byte == UInt8(ascii: "&") {
                    value += try entity()
                } else {
                    value.append(byte)
                }
            }
            return String(decoding: value, as: UTF8.self)
        }

        mutating func entity() throws(RegistrationError) -> [UInt8] {
            let start = position
            while position < bytes.count, bytes[position] != UInt8(ascii: ";"), position - start < 10 { position += 1 }
            guard position < bytes.count, bytes[position] == UInt8(ascii: ";") else { throw AdditionalParams.malformed("unterminated entity") }
            let name = String(decoding: bytes[start..<position], as: UTF8.self)
            position += 1
            switch name {
            case "amp": return [UInt8(ascii: "&")]
            case "quot": return [UInt8(ascii: "\"")]
            case "apos": return [UInt8(ascii: "'")]
            case "lt": return [UInt8(ascii: "<")]
            case "gt": return [UInt8(ascii: ">")]
            default:
                let number: UInt32?
                if name.hasPrefix("#x") || name.hasPrefix("#X") {
                    number = UInt32(name.dropFirst(2), radix: 16)
                } else if name.hasPrefix("#") {
                    number = UInt32(name.dropFirst(), radix: 10)
                } else {
                    number = nil
                }
                guard let number, let scalar = Unicode.Scalar(number) else { throw AdditionalParams.malformed("unknown entity &\(name);") }
                // XML 1.0 has no character 0, and PostgreSQL text cannot hold it.
                guard number != 0 else { throw AdditionalParams.malformed("&\(name); is a NUL character, not allowed in XML") }
                return Array(String(Character(scalar)).utf8)
            }
        }
    }
}
