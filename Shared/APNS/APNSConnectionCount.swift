import Metrics
import Synchronization

/// Open HTTP/2 connections of one client, kept from the connections' own channel events (opened
/// when AHC hands over a ready connection, closed on its close future), published as the gauge
/// `push_apns_connections`.
final class APNSConnectionCount: Sendable {
    private let count = Mutex(0)
    private let gauge: Gauge

    init(factory: any MetricsFactory) {
        self.gauge = Gauge(label: "push_apns_connections", dimensions: [], factory: factory)
        self.gauge.record(0)
    }

    var value: Int { self.count.withLock { $0 } }

    func opened() { self.change(by: 1) }

    func closed() { self.change(by: -1) }

    private func change(by delta: Int) {
        let value = self.count.withLock {
            $0 += delta
            return $0
        }
        self.gauge.record(value)
    }
}
