import Foundation
import NIOPosix

#if canImport(Glibc)
    import Glibc
#endif

/// The event loops of the in-process provider simulators, on threads of their own at a higher
/// scheduling priority (nice -10) when the process may raise it (root, as in CI).
///
/// The simulator stands for Apple's and Google's servers, which do not share the senders' CPU.
/// On this 2-core host running five test processes (load average 8 to 10), the simulator's
/// threads went unscheduled for 200 ms and more at a time; the requests that reached its socket
/// meanwhile were stamped together when it ran again, and `ThrottleTests` read that bunching as
/// a second above the rate (43 arrivals at 40/s with two `yes` processes beside the test: a
/// 100 ms bucket of 11 right after two of 0 and 1). The arrival times are the provider's
/// measure of the rate only if the provider reads its socket when the bytes come.
enum ProviderEventLoops {
    static let group: MultiThreadedEventLoopGroup = {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        for loop in group.makeIterator() {
            // Per-thread nice on Linux: the thread's id (from /proc/thread-self, "<pid>/task/<tid>")
            // as the PRIO_PROCESS target. Refused without the privilege: the loops then run at
            // the default priority.
            _ = try? loop.submit {
                guard let link = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/thread-self"),
                    let tid = link.split(separator: "/").last.flatMap({ id_t($0) })
                else { return }
                _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), tid, -10)
            }.wait()
        }
        return group
    }()
}
