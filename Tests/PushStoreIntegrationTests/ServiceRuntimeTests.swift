import Foundation
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("A service executable's operations endpoints and lifecycle", .serialized)
struct ServiceRuntimeTests {
    /// Starts the `registration` executable with `overrides` on top of the test environment,
    /// its operations endpoints on `port`.
    private static func start(port: Int, overrides: [String: String] = [:]) throws -> BuiltExecutable {
        var environment = ProcessInfo.processInfo.environment
        environment["PUSH_OPS_HOST"] = "127.0.0.1"
        environment["PUSH_OPS_PORT"] = String(port)
        environment["LOG_LEVEL"] = "error"
        // Its own projection groups, so test runs never touch the stack's real ones.
        let suffix = UUID().uuidString.prefix(8).lowercased()
        environment["REGISTRATION_CATALOG_GROUP"] = "test.runtime-catalog.\(suffix)"
        environment["REGISTRATION_SUBSCRIPTIONS_GROUP"] = "test.runtime-subscriptions.\(suffix)"
        environment["REGISTRATION_PORT"] = String(try EphemeralPort.next())
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        environment.merge(overrides) { $1 }
        return try BuiltExecutable("registration", environment: environment)
    }

    private static func get(_ port: Int, _ path: String) async throws -> (status: Int, body: String, contentType: String?) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Content-Type"))
    }

    @Test("ready when PostgreSQL and the broker answer; metrics served; SIGTERM exits cleanly")
    func readyAndGracefulShutdown() async throws {
        _ = try StoreTestSupport.configuration()
        let port = try EphemeralPort.next()
        let service = try Self.start(port: port)
        defer { service.killIfRunning() }
        try await service.waitUntilReady(port: port, path: "/health/live")

        let live = try await Self.get(port, "/health/live")
        #expect(live.status == 200)
        try await eventually(within: .seconds(20), "readiness turns 200") {
            try await Self.get(port, "/health/ready").status == 200
        }
        let ready = try await Self.get(port, "/health/ready")
        #expect(ready.body.contains(#""postgres":"ok""#))
        #expect(ready.body.contains(#""kafka":"ok""#))
        let metrics = try await Self.get(port, "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.contentType?.hasPrefix("text/plain") == true)

        await service.terminate(within: .seconds(20))
        #expect(service.terminationReason == .exit && service.terminationStatus == 0, "graceful shutdown exits with 0\n\(service.logTail())")
    }

    @Test("unready, naming the failing dependency, while the broker cannot be reached")
    func unreadyWithoutBroker() async throws {
        _ = try StoreTestSupport.configuration()
        let port = try EphemeralPort.next()
        let service = try Self.start(port: port, overrides: ["KAFKA_BROKERS": "127.0.0.1:1"])
        defer { service.killIfRunning() }
        try await service.waitUntilReady(port: port, path: "/health/live")
        let ready = try await Self.get(port, "/health/ready")
        #expect(ready.status == 503)
        #expect(ready.body.contains(#""status":"unready""#))
        #expect(ready.body.contains(#""postgres":"ok""#))
        #expect(!ready.body.contains(#""kafka":"ok""#), "\(ready.body)")
        #expect(try await Self.get(port, "/health/live").status == 200, "liveness does not depend on the broker")
    }

    @Test("a malformed setting stops the service with a message naming it")
    func badConfiguration() async throws {
        var environment = ProcessInfo.processInfo.environment
        environment["PUSH_OPS_PORT"] = "not-a-port"
        let (status, message) = try await BuiltExecutable.run("registration", arguments: [], environment: environment, within: .seconds(30))
        #expect(status == 78, "exit status 78 (EX_CONFIG), not a crash")
        #expect(message.contains("PUSH_OPS_PORT must be an integer"), "\(message)")
    }
}
