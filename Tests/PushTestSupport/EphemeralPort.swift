import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A free TCP port on 127.0.0.1 for a server a test starts: the kernel picks it (a socket bound to
/// port 0), the socket is closed, the port handed out. Never the same port twice in one test
/// process, so two servers of a test (a service and its operations endpoint) cannot collide.
package enum EphemeralPort {
    private static let handedOut = Mutex<Set<Int>>([])

    /// A port nothing in this process was given before; fails the test if no socket can be bound.
    package static func next(sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        for _ in 0..<100 {
            let port = try bindAndRelease(sourceLocation: sourceLocation)
            let isNew = handedOut.withLock { $0.insert(port).inserted }
            if isNew { return port }
        }
        Issue.record("no new ephemeral port after 100 tries", sourceLocation: sourceLocation)
        throw CancellationError()
    }

    private static func bindAndRelease(sourceLocation: SourceLocation) throws -> Int {
        #if os(Linux)
            let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
            let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        try #require(descriptor >= 0, "socket() failed: errno \(errno)", sourceLocation: sourceLocation)
        defer { close(descriptor) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, length) }
        }
        try #require(bound == 0, "bind(127.0.0.1:0) failed: errno \(errno)", sourceLocation: sourceLocation)
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        try #require(named == 0, "getsockname failed: errno \(errno)", sourceLocation: sourceLocation)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}
