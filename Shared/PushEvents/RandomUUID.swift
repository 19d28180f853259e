import Foundation

/// Random (version 4) UUIDs for event ids, cut from `RandomBytes`.
///
/// Foundation's `UUID()` asks the system for each one; one event per notification made that
/// about 3 % of a sender's CPU. The bytes still come from the kernel's generator, 256 ids per
/// read.
package enum RandomUUID {
    package static func make() -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &uuid) { RandomBytes.copy(into: $0) }
        uuid.6 = (uuid.6 & 0x0F) | 0x40  // version 4
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: uuid)
    }
}
