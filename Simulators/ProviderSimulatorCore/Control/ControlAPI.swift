import Foundation
import NIOCore

/// The simulator's own routes, served on the same HTTP/2 + TLS port as the provider API:
/// `GET /health` and everything under `/_control/`. See docs/simulators.md for each route.
package struct ControlAPI: Sendable {
    package static let prefix = "/_control/"

    let behaviour: any ProviderBehaviour
    let state: SimulatorState
    let connections: ConnectionRegistry

    package static func handles(_ path: String) -> Bool {
        path == "/health" || path.hasPrefix(Self.prefix)
    }

    package func respond(to request: SimulatorRequest) -> SimulatorResponse {
        switch (request.method, request.path) {
        case ("GET", "/health"):
            return .json(status: 200, ["status": "ok", "provider": self.behaviour.providerName])
        case ("GET", "/_control/counters"):
            var counters = Self.encodable(self.state.counters)
            counters["openConnections"] = self.connections.count
            counters["maxConcurrentStreams"] = self.state.maxConcurrentStreams
            return .json(status: 200, counters)
        case ("GET", "/_control/log"):
            let limit = request.query["limit"].flatMap(Int.init) ?? 1000
            let entries = self.state.notifications(
                token: request.query["token"],
                mId: request.query["mId"],
                id: request.query["id"],
                limit: limit
            )
            return .json(status: 200, ["count": entries.count, "entries": entries.map(Self.encodable)])
        case ("POST", "/_control/reset"):
            self.state.reset()
            self.behaviour.reset()
            let limit = self.state.maxConcurrentStreams
            self.connections.forEach { $0.advertise(maxConcurrentStreams: limit) }
            return .json(status: 200, self.faultsDocument())
        case ("GET", "/_control/faults"):
            return .json(status: 200, self.faultsDocument())
        case ("POST", "/_control/faults"), ("PUT", "/_control/faults"):
            return self.updateFaults(request)
        case ("POST", "/_control/goaway"):
            let count = self.connections.count
            self.connections.forEach { $0.sendGoAway() }
            return .json(status: 200, ["connections": count])
        default:
            return .json(status: 404, ["error": "no control route \(request.method) \(request.path)"])
        }
    }

    private func faultsDocument() -> [String: Any] {
        var document = Self.encodable(self.state.faults)
        document["maxConcurrentStreams"] = self.state.maxConcurrentStreams
        return document
    }

    private func updateFaults(_ request: SimulatorRequest) -> SimulatorResponse {
        guard let fields = JSON.object(request.body.readableBytesView) else {
            return .json(status: 400, ["error": "the body must be a JSON object"])
        }
        if let unknown = fields.keys.first(where: { !Self.faultKeys.contains($0) }) {
            return .json(status: 400, ["error": "unknown key \(unknown)", "known": Self.faultKeys.sorted()])
        }
        func int(_ key: String) -> Int?? {
            guard let value = fields[key] else { return .none }
            if value is NSNull { return .some(nil) }
            return (value as? NSNumber).map { .some($0.intValue) } ?? .none
        }
        if let limit = int("maxConcurrentStreams"), let limit, limit > 0 {
            self.state.maxConcurrentStreams = limit
            let limitsUntilSuccess = self.behaviour.limitsStreamsUntilFirstSuccess
            self.connections.forEach { connection in
                if !limitsUntilSuccess || connection.hasSucceeded {
                    connection.advertise(maxConcurrentStreams: limit)
                }
            }
        }
        _ = self.state.updateFaults { plan in
            if let value = int("latencyMs") { plan.latencyMs = max(0, value ?? 0) }
            if let value = fields["failPercent"] as? NSNumber { plan.failPercent = min(100, max(0, value.doubleValue)) }
            if let value = int("failStatus") { plan.failStatus = value ?? 500 }
            if fields.keys.contains("failReason") { plan.failReason = fields["failReason"] as? String }
            if let value = int("burst429") { plan.burst429 = max(0, value ?? 0) }
            if let value = int("goAwayAfterStreams") { plan.goAwayAfterStreams = value.flatMap { $0 > 0 ? $0 : nil } }
            if let value = int("quotaPerMinute") { plan.quotaPerMinute = value.flatMap { $0 >= 0 ? $0 : nil } }
            if let tokens = fields["deviceQuota"] as? [String: Any] {
                for (token, count) in tokens {
                    let count = (count as? NSNumber)?.intValue ?? 0
                    plan.deviceQuota[token] = count > 0 ? count : nil
                }
            }
        }
        return .json(status: 200, self.faultsDocument())
    }

    static let faultKeys: Set<String> = [
        "latencyMs", "failPercent", "failStatus", "failReason", "burst429", "goAwayAfterStreams",
        "quotaPerMinute", "deviceQuota", "maxConcurrentStreams",
    ]

    /// A `Codable` value as a JSON tree, so it can be merged with other fields.
    static func encodable<T: Encodable>(_ value: T) -> [String: Any] {
        guard let data = try? JSONEncoder().encode(value),
            let object = JSON.object(data)
        else { return [:] }
        return object
    }
}
