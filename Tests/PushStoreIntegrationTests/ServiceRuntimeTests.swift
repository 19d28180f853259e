import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("A service executable's operations endpoints and lifecycle", .serialized)
struct ServiceRuntimeTests {
    /// Starts the `registration` executable with `overrides` on top of the test environment.
    private static func start(port: Int, overrides: [String: String] = [:]) throws -> Process {
        let process = Process()
        process.executableURL = try StoreTestSupport.executable("registration")
        var environment = ProcessInfo.processInfo.environment
        environment["PUSH_OPS_HOST"] = "127.0.0.1"
        environment["PUSH_OPS_PORT"] = String(port)
        environment["LOG_LEVEL"] = "error"
        // Its own projection groups, so test runs never touch the stack's real ones.
        let suffix = UUID().uuidString.prefix(8).lowercased()
        environment["REGISTRATION_CATALOG_GROUP"] = "test.runtime-catalog.\(suffix)"
        environment["REGISTRATION_SUBSCRIPTIONS_GROUP"] = "test.runtime-subscriptions.\(suffix)"
        environment["REGISTRATION_PORT"] = String(port + 100)
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        environment.merge(overrides) { $1 }
        process.environment = environment
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    private static func get(_ port: Int, _ path: String) async throws -> (status: Int, body: String, contentType: String?) {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.timeoutInterval = 10
        let (data, response) = try await URLSession.shared.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        return (http.statusCode, String(decoding: data, as: UTF8.self), http.value(forHTTPHeaderField: "Content-Type"))
    }

    /// Waits until the endpoint answers at all.
    private static func waitForListener(_ port: Int) async throws {
        try await StoreTestSupport.eventually(within: .seconds(30), "the service listens on \(port)") {
            (try? await get(port, "/health/live")) != nil
        }
    }

    @Test("ready when PostgreSQL and the broker answer; metrics served; SIGTERM exits cleanly")
    func readyAndGracefulShutdown() async throws {
        _ = try StoreTestSupport.configuration()
        let port = 19_501
        let service = try Self.start(port: port)
        defer { if service.isRunning { service.terminate() } }
        try await Self.waitForListener(port)

        let live = try await Self.get(port, "/health/live")
        #expect(live.status == 200)
        try await StoreTestSupport.eventually(within: .seconds(20), "readiness turns 200") {
            try await Self.get(port, "/health/ready").status == 200
        }
        let ready = try await Self.get(port, "/health/ready")
        #expect(ready.body.contains(#""postgres":"ok""#))
        #expect(ready.body.contains(#""kafka":"ok""#))
        let metrics = try await Self.get(port, "/metrics")
        #expect(metrics.status == 200)
        #expect(metrics.contentType?.hasPrefix("text/plain") == true)

        service.terminate()
        let clock = ContinuousClock()
        let started = clock.now
        while service.isRunning, clock.now - started < .seconds(20) {
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect(!service.isRunning, "SIGTERM stops the service")
        #expect(service.terminationReason == .exit && service.terminationStatus == 0, "graceful shutdown exits with 0")
    }

    @Test("unready, naming the failing dependency, while the broker cannot be reached")
    func unreadyWithoutBroker() async throws {
        _ = try StoreTestSupport.configuration()
        let port = 19_502
        let service = try Self.start(port: port, overrides: ["KAFKA_BROKERS": "127.0.0.1:1"])
        defer { service.terminate() }
        try await Self.waitForListener(port)
        let ready = try await Self.get(port, "/health/ready")
        #expect(ready.status == 503)
        #expect(ready.body.contains(#""status":"unready""#))
        #expect(ready.body.contains(#""postgres":"ok""#))
        #expect(!ready.body.contains(#""kafka":"ok""#), "\(ready.body)")
        #expect(try await Self.get(port, "/health/live").status == 200, "liveness does not depend on the broker")
    }

    @Test("a malformed setting stops the service with a message naming it")
    func badConfiguration() async throws {
        let process = Process()
        process.executableURL = try StoreTestSupport.executable("registration")
        var environment = ProcessInfo.processInfo.environment
        environment["PUSH_OPS_PORT"] = "not-a-port"
        process.environment = environment
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        let message = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        #expect(process.terminationReason == .exit && process.terminationStatus == 78, "exit status 78 (EX_CONFIG), not a crash")
        #expect(message.contains("PUSH_OPS_PORT must be an integer"), "\(message)")
    }
}
