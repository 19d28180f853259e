import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Random (version 4) UUIDs for event ids, cut from system randomness fetched 4 KiB at a time.
///
/// Foundation's `UUID()` asks the system for each one; one event per notification made that
/// about 3 % of a sender's CPU. The bytes still come from the kernel's generator
/// (`/dev/urandom`), 256 ids per read.
package enum RandomUUID {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var next = 4096
    }

    private static let pool = Mutex(Pool())

    package static func make() -> UUID {
        var uuid: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        pool.withLock { pool in
            if pool.next == pool.bytes.count {
                pool.bytes.withUnsafeMutableBytes(Self.fill)
                pool.next = 0
            }
            let next = pool.next
            withUnsafeMutableBytes(of: &uuid) { target in
                pool.bytes.withUnsafeBytes { source in
                    target.copyMemory(from: UnsafeRawBufferPointer(rebasing: source[next..<(next + 16)]))
                }
            }
            pool.next += 16
        }
        uuid.6 = (uuid.6 & 0x0F) | 0x40  // version 4
        uuid.8 = (uuid.8 & 0x3F) | 0x80  // RFC 4122 variant
        return UUID(uuid: uuid)
    }

    /// `/dev/urandom`, kept open (the kernel's generator, as `getrandom` would give).
    private static let urandom: Int32 = open("/dev/urandom", O_RDONLY | O_CLOEXEC)

    private static func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        var filled = 0
        while urandom >= 0, filled < buffer.count {
            let count = read(urandom, buffer.baseAddress! + filled, buffer.count - filled)
            if count > 0 {
                filled += count
            } else if count == 0 || errno != EINTR {
                break
            }
        }
        guard filled < buffer.count else { return }
        // Not expected on Linux: the standard library's generator for the rest.
        var generator = SystemRandomNumberGenerator()
        for index in filled..<buffer.count { buffer[index] = UInt8.random(in: 0...255, using: &generator) }
    }
}
