import Foundation
import PushWire

/// An event whose payload writes its own JSON: the events produced once per notification (the
/// planned messages and the results), where `JSONEncoder` was a large share of the senders' and
/// the planner's CPU (docs/benchmarks.md).
///
/// The bytes must be exactly those `EventJSON.encoder` writes for the same value (keys sorted, nil
/// optionals omitted); `EventJSONTests` compares the two for every conforming type, so the wire
/// contract does not depend on which path wrote a record.
package protocol EventJSONWritable {
    /// Writes the payload's members, in sorted key order, into the object the writer has open.
    func writeMembers(to writer: inout EventJSONWriter)
}

/// Appends compact JSON to a byte buffer: the project's one hand-written JSON writer. It writes
/// the events the way `EventJSON.encoder` formats them: no spaces, `/` not escaped, control
/// characters as `\b \t \n \f \r` or `\u00xx`, UUIDs upper case, dates as ISO 8601 UTC with
/// milliseconds (truncated, after rounding to the microsecond: `appendDate`). The planner also writes the
/// provider payloads with it (`MessageFactory`), with `controlCharacters: .unicode` and keys
/// known only at run time (`string(key:_:)`).
///
/// Members are written in the order they are called; event writers call them in sorted key
/// order.
package struct EventJSONWriter {
    /// How the control characters that JSON can also write short (`\b`, `\f`) are escaped;
    /// `\t \n \r` are always short, the others always `\u00xx`.
    package enum ControlCharacters: Sendable {
        /// `\b` and `\f`, as `JSONEncoder` writes them: the events.
        case short
        /// `\u0008` and `\u000c`: the provider payloads, whose bytes are kept as they were.
        case unicode
    }

    package private(set) var bytes: [UInt8] = []
    /// Whether the object being written has no member yet.
    private var empty = true
    private let controlCharacters: ControlCharacters

    package init(capacity: Int = 512, controlCharacters: ControlCharacters = .short) {
        bytes.reserveCapacity(capacity)
        self.controlCharacters = controlCharacters
    }

    /// A whole object; `body` writes its members. Returns the object's size in bytes.
    @discardableResult
    package mutating func object(_ body: (inout EventJSONWriter) -> Void) -> Int {
        let start = bytes.count
        bytes.append(UInt8(ascii: "{"))
        let outer = empty
        empty = true
        body(&self)
        empty = outer
        bytes.append(UInt8(ascii: "}"))
        return bytes.count - start
    }

    /// A member whose value is an object. Returns the object's size in bytes (the key not
    /// counted).
    @discardableResult
    package mutating func object(_ key: StaticString, _ body: (inout EventJSONWriter) -> Void) -> Int {
        self.key(key)
        return object(body)
    }

    package mutating func string(_ key: StaticString, _ value: String) {
        self.key(key)
        appendQuoted(value)
    }

    /// Omitted when nil, like a synthesized `encodeIfPresent`.
    package mutating func string(_ key: StaticString, _ value: String?) {
        if let value { string(key, value) }
    }

    /// A string member whose key is known only at run time (a payload's variable name): the key
    /// is escaped like a value.
    package mutating func string(key: String, _ value: String) {
        if empty { empty = false } else { bytes.append(UInt8(ascii: ",")) }
        appendQuoted(key)
        bytes.append(UInt8(ascii: ":"))
        appendQuoted(value)
    }

    /// A number: an integral value under 10^15 without a fraction (`1`, not `1.0`), any other
    /// as Swift's shortest representation (`0.25`).
    package mutating func number(_ key: StaticString, _ value: Double) {
        self.key(key)
        if value == value.rounded() && abs(value) < 1e15 {
            appendDecimal(Int(value))
        } else {
            bytes.append(contentsOf: String(value).utf8)
        }
    }

    package mutating func int(_ key: StaticString, _ value: Int) {
        self.key(key)
        appendDecimal(value)
    }

    /// Omitted when nil.
    package mutating func int(_ key: StaticString, _ value: Int32?) {
        if let value { int(key, Int(value)) }
    }

    /// Omitted when nil.
    package mutating func int(_ key: StaticString, _ value: Int?) {
        if let value { int(key, value) }
    }

    package mutating func uuid(_ key: StaticString, _ value: UUID) {
        self.key(key)
        bytes.append(UInt8(ascii: "\""))
        value.forEachTextByte(digits: "0123456789ABCDEF") { bytes.append($0) }
        bytes.append(UInt8(ascii: "\""))
    }

    package mutating func date(_ key: StaticString, _ value: Date) {
        self.key(key)
        appendDate(value)
    }

    /// Omitted when nil.
    package mutating func date(_ key: StaticString, _ value: Date?) {
        if let value { date(key, value) }
    }

    // MARK: pieces

    private mutating func key(_ key: StaticString) {
        if empty { empty = false } else { bytes.append(UInt8(ascii: ",")) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: UnsafeBufferPointer(start: key.utf8Start, count: key.utf8CodeUnitCount))
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func appendQuoted(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { utf8 in
            var plainFrom = 0
            var index = 0
            while index < utf8.count {
                // Eight bytes at a time while none needs escaping: the sealed boxes (base64, a
                // few hundred bytes) and most texts have none (the byte-by-byte scan was 6 % of
                // the planner's CPU).
                while index + 8 <= utf8.count, !Self.mayNeedEscaping(UnsafeRawPointer(utf8.baseAddress! + index).loadUnaligned(as: UInt64.self)) {
                    index += 8
                }
                guard index < utf8.count else { break }
                let unit = utf8[index]
                index += 1
                guard unit < 0x20 || unit == UInt8(ascii: "\"") || unit == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainFrom..<(index - 1)]))
                plainFrom = index
                bytes.append(UInt8(ascii: "\\"))
                switch unit {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(unit)
                case 0x08 where controlCharacters == .short: bytes.append(UInt8(ascii: "b"))
                case 0x09: bytes.append(UInt8(ascii: "t"))
                case 0x0A: bytes.append(UInt8(ascii: "n"))
                case 0x0C where controlCharacters == .short: bytes.append(UInt8(ascii: "f"))
                case 0x0D: bytes.append(UInt8(ascii: "r"))
                default:
                    let hex: StaticString = "0123456789abcdef"
                    bytes.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    bytes.append(hex.utf8Start[Int(unit >> 4)])
                    bytes.append(hex.utf8Start[Int(unit & 0x0F)])
                }
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[plainFrom...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// Whether any of the eight bytes may be a control character, a quote or a backslash (no false
    /// negative; a false positive only sends the bytes through the byte-by-byte check).
    @inline(__always)
    private static func mayNeedEscaping(_ word: UInt64) -> Bool {
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highBits: UInt64 = 0x8080_8080_8080_8080
        func hasZeroByte(_ value: UInt64) -> Bool { (value &- ones) & ~value & highBits != 0 }
        let below0x20 = (word &- ones &* 0x20) & ~word & highBits != 0
        return below0x20 || hasZeroByte(word ^ (ones &* 0x22)) || hasZeroByte(word ^ (ones &* 0x5C))
    }

    private mutating func appendDecimal(_ value: Int) {
        if value < 0 {
            bytes.append(UInt8(ascii: "-"))
            // The magnitude of Int.min does not fit in an Int.
            appendDigits(value.magnitude, minimumWidth: 1)
        } else {
            appendDigits(UInt(value), minimumWidth: 1)
        }
    }

    private mutating func appendDigits(_ value: UInt, minimumWidth: Int) {
        var digits:
            (
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8
            ) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { digits in
            repeat {
                digits[19 - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0 || count < minimumWidth
            bytes.append(contentsOf: UnsafeRawBufferPointer(rebasing: digits[(20 - count)...]))
        }
    }

    /// The text `date(_:_:)` writes, without the quotes: what `EventJSON.encoder` writes too.
    package static func dateText(_ date: Date) -> String {
        var writer = EventJSONWriter(capacity: 32)
        writer.appendDate(date)
        return String(decoding: writer.bytes.dropFirst().dropLast(), as: UTF8.self)
    }

    /// `yyyy-MM-ddTHH:mm:ss.SSSZ`, milliseconds truncated after rounding to the microsecond: a
    /// `Date` is a `Double`, so a whole millisecond such as `.144` is often held as
    /// `.14399999...`; truncated as it is, it would be written `.143`, one millisecond early,
    /// and one more on each rewrite. (Foundation's `ISO8601FormatStyle` truncates as it is.)
    private mutating func appendDate(_ date: Date) {
        let interval = date.timeIntervalSinceReferenceDate
        // Within about ±12,000 years of 2001 (Int64 microseconds hold far more); beyond, and for
        // NaN, the formatter's own output below.
        guard interval.magnitude < 400_000_000_000 else {
            bytes.append(contentsOf: "\"\(date.formatted(EventJSON.withFraction))\"".utf8)
            return
        }
        let microseconds = Int64((interval * 1_000_000).rounded())
        let whole = microseconds >= 0 ? microseconds / 1_000_000 : (microseconds - 999_999) / 1_000_000
        let milliseconds = Int((microseconds - whole * 1_000_000) / 1000)
        let seconds = Int(whole) + EventJSONDate.referenceDateSince1970
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let ofDay = seconds - days * 86_400
        let (year, month, day) = EventJSONDate.civil(fromDays: days)
        guard (0...9999).contains(year) else {
            // Outside what four digits hold: the formatter's own output.
            bytes.append(contentsOf: "\"\(date.formatted(EventJSON.withFraction))\"".utf8)
            return
        }
        bytes.append(UInt8(ascii: "\""))
        appendDigits(UInt(year), minimumWidth: 4)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(UInt(month), minimumWidth: 2)
        bytes.append(UInt8(ascii: "-"))
        appendDigits(UInt(day), minimumWidth: 2)
        bytes.append(UInt8(ascii: "T"))
        appendDigits(UInt(ofDay / 3600), minimumWidth: 2)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(UInt(ofDay / 60 % 60), minimumWidth: 2)
        bytes.append(UInt8(ascii: ":"))
        appendDigits(UInt(ofDay % 60), minimumWidth: 2)
        bytes.append(UInt8(ascii: "."))
        appendDigits(UInt(milliseconds), minimumWidth: 3)
        bytes.append(UInt8(ascii: "Z"))
        bytes.append(UInt8(ascii: "\""))
    }
}

/// Calendar arithmetic for event dates (proleptic Gregorian, UTC); also the COPY rows'
/// timestamps (`CopyTextRows`).
package enum EventJSONDate {
    /// Seconds from 1970-01-01 to 2001-01-01, Foundation's reference date.
    static let referenceDateSince1970 = 978_307_200

    /// (year, month, day) of the day `days` after 1970-01-01.
    package static func civil(fromDays days: Int) -> (Int, Int, Int) {
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// Days from 1970-01-01 to (year, month, day).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let year = month <= 2 ? year - 1 : year
        let era = (year >= 0 ? year : year - 399) / 400
        let yearOfEra = year - era * 400
        let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysInMonth(year: Int, month: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
