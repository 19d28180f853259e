import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Bytes from the kernel's random generator (`/dev/urandom`), fetched 4 KiB at a time and handed
/// out in order, each byte once.
///
/// The standard library's `SystemRandomNumberGenerator` makes a system call for every eight
/// bytes it returns, and `UInt8.random(in:using:)` draws a whole word per byte: a 32-byte data key
/// cost 32 calls, 8 % of the planner's CPU when a fan-out created a key per device (the e2e
/// profile in docs/benchmarks.md, "Cost ledger"). The bytes are the kernel's either way.
package enum RandomBytes {
    private struct Pool {
        var bytes = [UInt8](repeating: 0, count: 4096)
        var next = 4096
    }

    private static let pool = Mutex(Pool())

    /// `count` random bytes.
    package static func make(count: Int) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            copy(into: UnsafeMutableRawBufferPointer(buffer))
            initialized = count
        }
    }

    /// Fills `target` with random bytes.
    package static func copy(into target: UnsafeMutableRawBufferPointer) {
        var filled = 0
        while filled < target.count {
            pool.withLock { pool in
                if pool.next == pool.bytes.count {
                    pool.bytes.withUnsafeMutableBytes(Self.fill)
                    pool.next = 0
                }
                let count = min(target.count - filled, pool.bytes.count - pool.next)
                let next = pool.next
                pool.bytes.withUnsafeBytes { source in
                    UnsafeMutableRawBufferPointer(rebasing: target[filled..<(filled + count)])
                        .copyMemory(from: UnsafeRawBufferPointer(rebasing: source[next..<(next + count)]))
                }
                pool.next += count
                filled += count
            }
        }
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
