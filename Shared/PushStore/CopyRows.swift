import Foundation
import Logging
import NIOCore
import PostgresNIO
import PushEvents
import PushWire

/// Rows in the text format of PostgreSQL's `COPY ... FROM STDIN`, written straight into the
/// bytes that go to the server: no statement parameters, no formatter per value. Columns are
/// separated by a tab, rows end with a newline, a null is `\N`, and a text's backslash, tab,
/// newline and carriage return are escaped; a timestamp is written in UTC to the microsecond
/// (as postgres-nio binds a `Date`), without a `DateFormatter`.
///
/// A text with a NUL character is sent as it is: PostgreSQL refuses it (SQLSTATE 22021), as it
/// refuses it as a bound parameter, and `ProjectionRunner` then sets the record aside.
package struct CopyTextRows: Sendable {
    package private(set) var buffer: ByteBuffer
    /// Rows ended so far.
    package private(set) var count = 0
    private var atRowStart = true

    package init(capacity: Int = 64 * 1024) {
        buffer = ByteBufferAllocator().buffer(capacity: capacity)
    }

    private mutating func separate() {
        if atRowStart {
            atRowStart = false
        } else {
            buffer.writeInteger(UInt8(ascii: "\t"))
        }
    }

    package mutating func endRow() {
        buffer.writeInteger(UInt8(ascii: "\n"))
        atRowStart = true
        count += 1
    }

    package mutating func null() {
        separate()
        buffer.writeInteger(UInt8(ascii: "\\"))
        buffer.writeInteger(UInt8(ascii: "N"))
    }

    package mutating func text(_ value: String) {
        separate()
        var value = value
        value.withUTF8 { bytes in
            // Most texts (ids, tokens, statuses) have nothing to escape: one copy.
            guard bytes.contains(where: { $0 == UInt8(ascii: "\\") || $0 == 0x09 || $0 == 0x0A || $0 == 0x0D }) else {
                buffer.writeBytes(bytes)
                return
            }
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\\"):
                    buffer.writeInteger(UInt8(ascii: "\\"))
                    buffer.writeInteger(UInt8(ascii: "\\"))
                case 0x09:
                    buffer.writeInteger(UInt8(ascii: "\\"))
                    buffer.writeInteger(UInt8(ascii: "t"))
                case 0x0A:
                    buffer.writeInteger(UInt8(ascii: "\\"))
                    buffer.writeInteger(UInt8(ascii: "n"))
                case 0x0D:
                    buffer.writeInteger(UInt8(ascii: "\\"))
                    buffer.writeInteger(UInt8(ascii: "r"))
                default: buffer.writeInteger(byte)
                }
            }
        }
    }

    package mutating func text(_ value: String?) {
        if let value { text(value) } else { null() }
    }

    /// A JSON object of string members (a `jsonb` column), written by the events' own writer.
    package mutating func jsonObject(_ members: [String: String]) {
        var json = EventJSONWriter(capacity: 32 + members.count * 32)
        json.object { writer in
            for (key, value) in members { writer.string(key: key, value) }
        }
        text(String(decoding: json.bytes, as: UTF8.self))
    }

    package mutating func uuid(_ value: UUID) {
        separate()
        buffer.reserveCapacity(minimumWritableBytes: 36)
        value.forEachTextByte(digits: "0123456789abcdef") { buffer.writeInteger($0) }
    }

    package mutating func int(_ value: Int) {
        separate()
        digits(value)
    }

    package mutating func int(_ value: Int32?) {
        if let value { int(Int(value)) } else { null() }
    }

    /// `yyyy-MM-dd HH:mm:ss.ffffff+00`, rounded to the microsecond.
    package mutating func timestamp(_ value: Date) {
        separate()
        let microseconds = Int64((value.timeIntervalSince1970 * 1_000_000).rounded())
        var seconds = microseconds / 1_000_000
        var fraction = microseconds % 1_000_000
        if fraction < 0 {
            seconds -= 1
            fraction += 1_000_000
        }
        let days = Int(seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400)
        let ofDay = Int(seconds) - days * 86_400
        let (year, month, day) = EventJSONDate.civil(fromDays: days)
        guard (1...9999).contains(year) else {
            // Outside four digits (no event date is): PostgreSQL's own reading of the epoch.
            buffer.writeString("epoch")
            return
        }
        padded(year, 4)
        buffer.writeInteger(UInt8(ascii: "-"))
        padded(month, 2)
        buffer.writeInteger(UInt8(ascii: "-"))
        padded(day, 2)
        buffer.writeInteger(UInt8(ascii: " "))
        padded(ofDay / 3600, 2)
        buffer.writeInteger(UInt8(ascii: ":"))
        padded(ofDay / 60 % 60, 2)
        buffer.writeInteger(UInt8(ascii: ":"))
        padded(ofDay % 60, 2)
        buffer.writeInteger(UInt8(ascii: "."))
        padded(Int(fraction), 6)
        buffer.writeString("+00")
    }

    package mutating func timestamp(_ value: Date?) {
        if let value { timestamp(value) } else { null() }
    }

    private mutating func digits(_ value: Int) {
        if value < 0 { buffer.writeInteger(UInt8(ascii: "-")) }
        padded(value.magnitude, 1)
    }

    private mutating func padded(_ value: Int, _ width: Int) {
        padded(value.magnitude, width)
    }

    private mutating func padded(_ value: UInt, _ width: Int) {
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &scratch) { digits in
            var rest = value
            var count = 0
            repeat {
                digits[23 - count] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
                count += 1
            } while rest > 0 || count < width
            buffer.writeBytes(UnsafeRawBufferPointer(rebasing: digits[(24 - count)...]))
        }
    }
}

extension PostgresConnection {
    /// Copies `rows` into the temporary table `table` of this connection (created by
    /// `definition`, `CREATE TEMPORARY TABLE IF NOT EXISTS <table> (<definition>) ON COMMIT
    /// DELETE ROWS`, when this connection does not have it yet): a staging table, emptied by every
    /// commit and rolled back with its transaction, that set-based statements then merge into
    /// the projection's tables in the same transaction. Call inside a transaction.
    ///
    /// `table` and `definition` are the caller's literals, never input.
    package func stage(_ rows: CopyTextRows, into table: StaticString, definition: StaticString, columns: [String], logger: Logger) async throws {
        guard rows.count > 0 else { return }
        try await query(
            PostgresQuery(unsafeSQL: "CREATE TEMPORARY TABLE IF NOT EXISTS \(table) (\(definition)) ON COMMIT DELETE ROWS"), logger: logger)
        try await copyFrom(table: "\(table)", columns: columns, logger: logger) { writer in
            try await writer.write(rows.buffer)
        }
    }
}
