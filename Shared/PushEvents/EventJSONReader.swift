import Foundation
import PushWire

/// An event whose payload reads itself from JSON without `JSONDecoder`: the planned messages,
/// read once per notification by the senders.
///
/// The reader is a fast path, not a second definition of the format: it accepts only input whose
/// meaning is plain (no duplicate keys, integers as digits, dates as the events write them) and
/// throws on anything else, and the caller then decodes with `EventJSON.decoder`, which either
/// accepts the record the same way or names the problem. `EventJSONTests` checks that both paths
/// give equal values.
package protocol EventJSONReadable {
    /// Reads the payload object (the reader is at its opening brace).
    init(reading reader: inout EventJSONReader) throws(EventJSONReader.Unsupported)
}

/// A forward-only reader of one JSON text, for `EventJSONReadable` types.
package struct EventJSONReader {
    /// The input is not one the fast path reads; decode it with `JSONDecoder` instead.
    package struct Unsupported: Error {}

    private let bytes: [UInt8]
    private var index = 0

    package init(_ bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// A member's key as it is in the input, compared with literals without making a `String`
    /// (`switch key { case "appId": ... }`).
    package struct Key {
        fileprivate let bytes: [UInt8]
        fileprivate let range: Range<Int>

        package static func ~= (pattern: StaticString, key: Key) -> Bool {
            key == pattern
        }

        /// The key as text (a key with an escape never gets here: see `members`).
        package var text: String { String(decoding: bytes[range], as: UTF8.self) }

        package static func == (key: Key, literal: StaticString) -> Bool {
            guard literal.utf8CodeUnitCount == key.range.count else { return false }
            return key.bytes.withUnsafeBufferPointer { bytes in
                memcmp(bytes.baseAddress! + key.range.lowerBound, literal.utf8Start, key.range.count) == 0
            }
        }
    }

    /// Reads an object, calling `member` with each key; `member` must read the value. A key with
    /// an escape is left to the general decoder (it could spell a key the fast path also reads
    /// plainly, which would hide a duplicate).
    package mutating func members(_ member: (inout EventJSONReader, Key) throws(Unsupported) -> Void) throws(Unsupported) {
        try expect(UInt8(ascii: "{"))
        if try peek() == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            try expect(UInt8(ascii: "\""))
            let start = index
            while true {
                guard index < bytes.count else { throw Unsupported() }
                let byte = bytes[index]
                if byte == UInt8(ascii: "\"") { break }
                guard byte >= 0x20, byte != UInt8(ascii: "\\") else { throw Unsupported() }
                index += 1
            }
            let key = Key(bytes: bytes, range: start..<index)
            index += 1
            try expect(UInt8(ascii: ":"))
            try member(&self, key)
            switch try next() {
            case UInt8(ascii: ","): continue
            case UInt8(ascii: "}"): return
            default: throw Unsupported()
            }
        }
    }

    /// Only whitespace may follow the value just read.
    package mutating func end() throws(Unsupported) {
        skipWhitespace()
        guard index == bytes.count else { throw Unsupported() }
    }

    /// True (and consumed) if the next value is `null`.
    package mutating func null() throws(Unsupported) -> Bool {
        guard try peek() == UInt8(ascii: "n") else { return false }
        try literal("null")
        return true
    }

    package mutating func string() throws(Unsupported) -> String {
        try expect(UInt8(ascii: "\""))
        let start = index
        var ascii = true
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                defer { index += 1 }
                return try text(start..<index, ascii: ascii)
            }
            if byte == UInt8(ascii: "\\") { return try escapedString(from: start) }
            if byte < 0x20 { throw Unsupported() }
            ascii = ascii && byte < 0x80
            index += 1
        }
        throw Unsupported()
    }

    package mutating func optionalString() throws(Unsupported) -> String? {
        try null() ? nil : try string()
    }

    /// An object whose members are all strings (a subscription's params). A duplicate key is
    /// left to the general decoder, which decides what it means.
    package mutating func stringMembers() throws(Unsupported) -> [String: String] {
        var read: [String: String] = [:]
        try members { reader, key throws(Unsupported) in
            guard read.updateValue(try reader.string(), forKey: key.text) == nil else { throw Unsupported() }
        }
        return read
    }

    /// `text`, one JSON object of string members and nothing else (`push.subscriptions.params`
    /// as PostgreSQL prints it), or nil when the fast path does not read it.
    package static func stringMembers(of text: String) -> [String: String]? {
        var reader = EventJSONReader(Array(text.utf8))
        do {
            let members = try reader.stringMembers()
            try reader.end()
            return members
        } catch {
            return nil
        }
    }

    /// An integer written as digits (optionally negative) that fits an `Int`.
    package mutating func int() throws(Unsupported) -> Int {
        _ = try peek()
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        let start = index
        var value = 0
        while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
            let digit = Int(bytes[index] - UInt8(ascii: "0"))
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = negative ? times10.subtractingReportingOverflow(digit) : times10.addingReportingOverflow(digit)
            guard !overflow1, !overflow2 else { throw Unsupported() }
            value = sum
            index += 1
        }
        // No digits, a leading zero, or a fraction or exponent: the decoder decides.
        guard index > start, bytes[start] != UInt8(ascii: "0") || index == start + 1 else { throw Unsupported() }
        if index < bytes.count, [UInt8(ascii: "."), UInt8(ascii: "e"), UInt8(ascii: "E")].contains(bytes[index]) { throw Unsupported() }
        return value
    }

    /// A UUID in its 36-character form, either case (what `UUID(uuidString:)` reads).
    package mutating func uuid() throws(Unsupported) -> UUID {
        try expect(UInt8(ascii: "\""))
        guard bytes.count - index >= 37, bytes[index + 36] == UInt8(ascii: "\""), let uuid = UUID(utf8: bytes[index..<(index + 36)]) else {
            throw Unsupported()
        }
        index += 37
        return uuid
    }

    /// `yyyy-MM-ddTHH:mm:ssZ` or `yyyy-MM-ddTHH:mm:ss.SSSZ`, as the events write dates.
    package mutating func date() throws(Unsupported) -> Date {
        try expect(UInt8(ascii: "\""))
        let start = index
        guard let end = bytes[start...].firstIndex(of: UInt8(ascii: "\"")) else { throw Unsupported() }
        index = end + 1
        let length = end - start
        guard length == 20 || length == 24, bytes[end - 1] == UInt8(ascii: "Z") else { throw Unsupported() }
        func number(_ offset: Int, _ count: Int) throws(Unsupported) -> Int {
            var value = 0
            for byte in bytes[(start + offset)..<(start + offset + count)] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { throw Unsupported() }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        func separator(_ offset: Int, _ character: Unicode.Scalar) throws(Unsupported) {
            guard bytes[start + offset] == UInt8(ascii: character) else { throw Unsupported() }
        }
        try separator(4, "-")
        try separator(7, "-")
        try separator(10, "T")
        try separator(13, ":")
        try separator(16, ":")
        let (year, month, day) = (try number(0, 4), try number(5, 2), try number(8, 2))
        let (hour, minute, second) = (try number(11, 2), try number(14, 2), try number(17, 2))
        guard (1...12).contains(month), (1...EventJSONDate.daysInMonth(year: year, month: month)).contains(day),
            hour < 24, minute < 60, second < 60
        else { throw Unsupported() }
        var milliseconds = 0
        if length == 24 {
            try separator(19, ".")
            milliseconds = try number(20, 3)
        }
        let seconds = EventJSONDate.days(year: year, month: month, day: day) * 86_400 + hour * 3600 + minute * 60 + second
        // The same arithmetic as `Date.ISO8601FormatStyle.parse`, so both paths give equal dates.
        return Date(timeIntervalSinceReferenceDate: Double(seconds - EventJSONDate.referenceDateSince1970) + Double(milliseconds) / 1000)
    }

    /// Null, or an integer that fits an `Int32`.
    package mutating func optionalInt32() throws(Unsupported) -> Int32? {
        if try null() { return nil }
        guard let value = Int32(exactly: try int()) else { throw Unsupported() }
        return value
    }

    package mutating func optionalDate() throws(Unsupported) -> Date? {
        try null() ? nil : try date()
    }

    /// Skips a value of a member this reader does not use (the decoder ignores them too).
    package mutating func skipValue() throws(Unsupported) {
        switch try peek() {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "{"): try members { reader, _ throws(Unsupported) in try reader.skipValue() }
        case UInt8(ascii: "["):
            index += 1
            if try peek() == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try skipValue()
                switch try next() {
                case UInt8(ascii: ","): continue
                case UInt8(ascii: "]"): return
                default: throw Unsupported()
                }
            }
        case UInt8(ascii: "t"): try literal("true")
        case UInt8(ascii: "f"): try literal("false")
        case UInt8(ascii: "n"): try literal("null")
        default: _ = try int()
        }
    }

    /// Stores a member's value; a key seen twice is left to the decoder.
    package static func once<Value>(_ slot: inout Value?, _ value: Value) throws(Unsupported) {
        guard slot == nil else { throw Unsupported() }
        slot = value
    }

    /// A member that must be present.
    package static func required<Value>(_ value: Value?) throws(Unsupported) -> Value {
        guard let value else { throw Unsupported() }
        return value
    }

    // MARK: pieces

    private mutating func skipWhitespace() {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    /// The next non-blank byte, not consumed.
    private mutating func peek() throws(Unsupported) -> UInt8 {
        skipWhitespace()
        guard index < bytes.count else { throw Unsupported() }
        return bytes[index]
    }

    private mutating func next() throws(Unsupported) -> UInt8 {
        let byte = try peek()
        index += 1
        return byte
    }

    private mutating func expect(_ byte: UInt8) throws(Unsupported) {
        guard try next() == byte else { throw Unsupported() }
    }

    private mutating func literal(_ word: StaticString) throws(Unsupported) {
        let word = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard bytes.count - index >= word.count, bytes[index..<(index + word.count)].elementsEqual(word) else { throw Unsupported() }
        index += word.count
    }

    private func text(_ range: Range<Int>, ascii: Bool) throws(Unsupported) -> String {
        try Self.text(bytes[range], ascii: ascii)
    }

    /// ASCII is valid UTF-8 as it is: `String(decoding:)` copies it without the validating
    /// initializer, which is generic and unspecialized here (it looked up generic metadata for
    /// every string: 2.5 % of the APNs sender's CPU). Anything else is validated.
    private static func text(_ bytes: some Collection<UInt8>, ascii: Bool) throws(Unsupported) -> String {
        if ascii { return String(decoding: bytes, as: UTF8.self) }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw Unsupported() }
        return text
    }

    /// The rest of a string that has escapes (the reader is at the first backslash). Unescapes
    /// into one buffer of at most the rest of the input, with raw pointers: appending byte by
    /// byte to an array checked its capacity and uniqueness for each (the APNs payload, a JSON
    /// text inside the record, is one escaped string of about 250 bytes per message).
    private mutating func escapedString(from start: Int) throws(Unsupported) -> String {
        var failed = false
        var ascii = true
        var end = index
        let from = index
        let unescaped = [UInt8](unsafeUninitializedCapacity: bytes.count - start) { output, count in
            count = 0
            bytes.withUnsafeBufferPointer { input in
                for byte in input[start..<from] {
                    ascii = ascii && byte < 0x80
                    output[count] = byte
                    count += 1
                }
                var at = from
                while at < input.count {
                    let byte = input[at]
                    at += 1
                    switch byte {
                    case UInt8(ascii: "\""):
                        end = at
                        return
                    case UInt8(ascii: "\\"):
                        guard at < input.count else { break }
                        let escape = input[at]
                        at += 1
                        var scalar: UInt32
                        switch escape {
                        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): scalar = UInt32(escape)
                        case UInt8(ascii: "b"): scalar = 0x08
                        case UInt8(ascii: "f"): scalar = 0x0C
                        case UInt8(ascii: "n"): scalar = 0x0A
                        case UInt8(ascii: "r"): scalar = 0x0D
                        case UInt8(ascii: "t"): scalar = 0x09
                        case UInt8(ascii: "u"):
                            guard let high = Self.hex4(input, at) else {
                                failed = true
                                return
                            }
                            at += 4
                            scalar = high
                            if (0xD800..<0xDC00).contains(high) {
                                // A high surrogate must be followed by an escaped low one.
                                guard input.count - at >= 6, input[at] == UInt8(ascii: "\\"), input[at + 1] == UInt8(ascii: "u"),
                                    let low = Self.hex4(input, at + 2), (0xDC00..<0xE000).contains(low)
                                else {
                                    failed = true
                                    return
                                }
                                at += 6
                                scalar = 0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
                            }
                            guard let character = Unicode.Scalar(scalar) else {
                                failed = true
                                return
                            }
                            if !character.isASCII {
                                ascii = false
                                for unit in UTF8.encode(character)! {
                                    output[count] = unit
                                    count += 1
                                }
                                continue
                            }
                        default:
                            failed = true
                            return
                        }
                        output[count] = UInt8(truncatingIfNeeded: scalar)
                        count += 1
                    default:
                        guard byte >= 0x20 else {
                            failed = true
                            return
                        }
                        ascii = ascii && byte < 0x80
                        output[count] = byte
                        count += 1
                    }
                }
                failed = true  // no closing quote
            }
        }
        guard !failed else { throw Unsupported() }
        index = end
        return try Self.text(unescaped, ascii: ascii)
    }

    /// Four hex digits at `at`, or nil.
    private static func hex4(_ input: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32? {
        guard input.count - at >= 4 else { return nil }
        var value: UInt32 = 0
        for byte in input[at..<(at + 4)] {
            guard let digit = try? hexValue(byte) else { return nil }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    private static func hexValue(_ byte: UInt8) throws(Unsupported) -> UInt8 {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: throw Unsupported()
        }
    }
}
