import Foundation
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// SIGTERM while PostgreSQL or the broker cannot be reached: every service executable must
/// exit well inside docker's default 10 s stop timeout, cleanly (status 0), and say so in its log.
///
/// "Unreachable" is the harder kind: a listener that completes the TCP handshake and then never
/// answers (a stalled server or a black-holed route), not a refused connection.
@Suite("A service stopped while a dependency does not answer", .serialized)
struct ServiceShutdownTests {
    enum Dependency: String, CustomTestStringConvertible {
        case broker, postgres
        var testDescription: String { rawValue }
    }

    @Test(
        "SIGTERM exits cleanly within 10 s",
        arguments: [
            ("registration", Dependency.broker), ("registration", .postgres),
            ("tracking-ingestion", .broker), ("tracking-ingestion", .postgres),
            ("apns-sender", .broker), ("apns-sender", .postgres),
        ]
    )
    func exitsInTime(service: String, unreachable: Dependency) async throws {
        _ = try StoreTestSupport.configuration()
        let silent = try SilentListener()
        defer { silent.close() }
        var overrides: [String: String] = [:]
        switch unreachable {
        case .broker: overrides["KAFKA_BROKERS"] = "127.0.0.1:\(silent.port)"
        case .postgres: overrides["POSTGRES_URL"] = "postgres://push:push@127.0.0.1:\(silent.port)/push"
        }
        let running = try RunningService(service, overrides: overrides)
        defer { running.kill() }
        try await running.waitUntilLive()
        // Let the parts get stuck on the dependency: connections opening, a consumer joining,
        // the schema check waiting for PostgreSQL.
        try await Task.sleep(for: .seconds(2))

        // A tracking hit waiting for the broker when the stop begins is answered, not dropped:
        // 503, since its event was not stored.
        let delivery = service == "tracking-ingestion" && unreachable == .broker ? try await Self.issuedDeliveryId() : nil
        async let hit: Int? = if let delivery { running.get(port: running.publicPort, "/r/?id=hd7e15e5c,\(delivery),1") } else { nil }
        if service == "tracking-ingestion" && unreachable == .broker { try await Task.sleep(for: .milliseconds(300)) }

        let clock = ContinuousClock()
        let started = clock.now
        running.terminate()
        let status = await running.exited()
        let elapsed = clock.now - started
        let log = running.log()
        print("\(service), \(unreachable) unreachable: exited \(status) after \(elapsed)")

        #expect(elapsed < .seconds(10), "\(service) took \(elapsed) to stop")
        #expect(status == .exit(0), "\(service) ends its shutdown by itself, not by the watchdog (70) or an error:\n\(log.suffix(3_000))")
        #expect(log.contains("Shutting down"), "the log says why it stops")
        #expect(log.contains("Stopped"), "the log says it stopped:\n\(log.suffix(3_000))")
        if let answered = await hit {
            #expect(answered == 503, "a hit the broker never stored is not answered 200")
        }
    }

    /// A scale-down or a rollout stops several replicas at once: each one's consumers leave
    /// their groups while the others' leaving rebalances them. Each must still stop by itself
    /// within its grace (7 s), not at the watchdog (status 70).
    @Test(
        "several apns-senders of one group stopped together, or one after the other, each exit 0 within the grace",
        arguments: [0, 700, 1_500])
    func instancesStoppedTogether(apartMilliseconds: Int) async throws {
        _ = try StoreTestSupport.configuration()
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        try await RunningService.createAPNSSenderTopics(suffix: suffix, partitions: 6)
        let instances = try (0..<3).map { _ in try RunningService("apns-sender", overrides: [:], suffix: suffix) }
        defer { instances.forEach { $0.kill() } }
        // Each instance has been given partitions in each of its three lanes' groups.
        try await eventually(within: .seconds(60), "every instance has partitions in its three lanes") {
            instances.allSatisfy(\.hasPartitionsInEveryLane)
        }

        let clock = ContinuousClock()
        let results = await withTaskGroup(of: (Int, RunningService.Status, Duration).self) { stopping in
            for (index, instance) in instances.enumerated() {
                stopping.addTask {
                    try? await Task.sleep(for: .milliseconds(apartMilliseconds * index))
                    let started = clock.now
                    instance.terminate()
                    let status = await instance.exited()
                    return (index, status, clock.now - started)
                }
            }
            return await stopping.reduce(into: []) { $0.append($1) }
        }
        for (index, status, elapsed) in results.sorted(by: { $0.0 < $1.0 }) {
            print("apns-sender \(index + 1) of 3, stopped \(apartMilliseconds) ms apart: exited \(status) after \(elapsed)")
            #expect(status == .exit(0), "instance \(index + 1) stopped by itself, not by the watchdog:\n\(instances[index].log().suffix(3_000))")
            #expect(elapsed < .seconds(8), "instance \(index + 1) took \(elapsed)")
        }
    }

    /// A process paused (SIGSTOP: a stalled machine, a debugger, a container frozen) and stopped
    /// as soon as it runs again: its consumers' lag queries, begun before the pause, were then
    /// timing out one partition after the other, and the stop waited for them (6 to 9 s, exit
    /// 70 in two runs of three, in a fault-injection run and by hand).
    @Test("an apns-sender stopped right after a pause of 2.3 s exits 0 within the grace")
    func stoppedAfterPause() async throws {
        _ = try StoreTestSupport.configuration()
        let suffix = String(UUID().uuidString.prefix(8).lowercased())
        try await RunningService.createAPNSSenderTopics(suffix: suffix, partitions: 12)
        let instance = try RunningService("apns-sender", overrides: ["KAFKA_SESSION_TIMEOUT_MS": "10000"], suffix: suffix)
        defer { instance.kill() }
        try await eventually(within: .seconds(60), "partitions in the three lanes") { instance.hasPartitionsInEveryLane }
        try await Task.sleep(for: .seconds(3))  // the lag timer's first queries are due
        instance.signal(SIGSTOP)
        try await Task.sleep(for: .milliseconds(2_300))
        instance.signal(SIGCONT)
        let clock = ContinuousClock()
        let started = clock.now
        instance.terminate()
        let status = await instance.exited()
        let elapsed = clock.now - started
        print("apns-sender stopped right after a pause: exited \(status) after \(elapsed)")
        #expect(status == .exit(0), "stopped by itself, not by the watchdog:\n\(instance.log().suffix(3_000))")
        #expect(elapsed < .seconds(4), "took \(elapsed)")
    }

    @Test("a shutdown that outlasts PUSH_SHUTDOWN_GRACE_MS is cut short: status 70 and a log line, within the grace plus the watchdog's 2 s")
    func forcedWhenGraceRunsOut() async throws {
        _ = try StoreTestSupport.configuration()
        let silent = try SilentListener()
        defer { silent.close() }
        // A hit waits up to TRACKING_STORE_TIMEOUT_MS (5 s) for the broker: longer than a 1 s grace.
        let running = try RunningService(
            "tracking-ingestion",
            overrides: [
                "KAFKA_BROKERS": "127.0.0.1:\(silent.port)", "PUSH_SHUTDOWN_GRACE_MS": "1000",
            ])
        defer { running.kill() }
        try await running.waitUntilLive()
        let delivery = try await Self.issuedDeliveryId()
        async let hit = running.get(port: running.publicPort, "/r/?id=hd7e15e5c,\(delivery),1")
        try await Task.sleep(for: .milliseconds(500))

        let clock = ContinuousClock()
        let started = clock.now
        running.terminate()
        let status = await running.exited()
        let elapsed = clock.now - started
        let log = running.log()
        print("tracking-ingestion, grace 1 s, a hit in flight: exited \(status) after \(elapsed)")
        #expect(elapsed < .seconds(3), "stopped within the grace (1 s) and the watchdog (2 s): \(elapsed)")
        #expect(status == .exit(70), "a forced shutdown is reported as such:\n\(log.suffix(3_000))")
        #expect(log.contains("Graceful shutdown did not finish in time"), "\(log.suffix(3_000))")
        #expect(await hit != 200, "the hit was never stored, so never answered 200")
    }

    /// A delivery id as the planner issues one (`push.delivery_plans`): the tracking endpoint
    /// sends hits to the broker only for such ids.
    static func issuedDeliveryId() async throws -> String {
        try await StoreTestSupport.withPostgres { postgres in
            let id = String(Int32.random(in: 1_000_000_000...Int32.max))
            try await postgres.query(
                """
                INSERT INTO push.delivery_plans (delivery_id, request_id, accepted, status, send_at)
                VALUES (\(id), \("shutdown-test-" + id), '{}', 'planned', now()) ON CONFLICT DO NOTHING
                """,
                logger: StoreTestSupport.logger)
            return id
        }
    }
}

/// A TCP port that accepts connections (the kernel completes the handshake into the backlog)
/// and never answers.
final class SilentListener: Sendable {
    let port: Int
    private let descriptor: Int32

    init() throws {
        let kind = Int32(SOCK_STREAM.rawValue)
        let descriptor = socket(AF_INET, kind, 0)
        try #require(descriptor >= 0, "socket() failed")
        self.descriptor = descriptor
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && listen(descriptor, 128) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            _ = Glibc.close(descriptor)
            throw POSIXError(.EADDRNOTAVAIL)
        }
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    func close() {
        _ = Glibc.close(descriptor)
    }
}

/// A service executable (`BuiltExecutable`) started with the test environment, free ports, its
/// own consumer groups and topics that do not exist (it must not touch the stack's data).
final class RunningService: Sendable {
    enum Status: Equatable, CustomStringConvertible {
        case exit(Int32)
        case signal(Int32)
        var description: String {
            switch self {
            case .exit(let code): "with status \(code)"
            case .signal(let signal): "on signal \(signal)"
            }
        }
    }

    let opsPort: Int
    let publicPort: Int
    private let executable: BuiltExecutable

    /// Instances given the same `suffix` share their consumer groups and topics.
    init(_ name: String, overrides: [String: String], suffix: String = String(UUID().uuidString.prefix(8).lowercased())) throws {
        opsPort = try EphemeralPort.next()
        publicPort = try EphemeralPort.next()
        var environment = ProcessInfo.processInfo.environment
        environment["PUSH_OPS_HOST"] = "127.0.0.1"
        environment["PUSH_OPS_PORT"] = String(opsPort)
        environment["REGISTRATION_PORT"] = String(publicPort)
        environment["TRACKING_HOST"] = "127.0.0.1"
        environment["TRACKING_PORT"] = String(publicPort)
        environment["LOG_LEVEL"] = "info"
        environment["KAFKA_SESSION_TIMEOUT_MS"] = "6000"
        for group in ["REGISTRATION_CATALOG_GROUP", "REGISTRATION_SUBSCRIPTIONS_GROUP", "TRACKING_LOG_GROUP", "APNS_SENDER_GROUP"] {
            environment[group] = "test.shutdown-\(group.lowercased()).\(suffix)"
        }
        for topic in [
            "APNS_MESSAGES", "APNS_RETRIES", "APNS_TRANSACTIONAL_MESSAGES", "APNS_TRANSACTIONAL_RETRIES", "APNS_THROTTLED", "CATALOG", "MESSAGE_RESULTS",
            "SUBSCRIPTIONS",
            "TRACKING",
        ] {
            environment["PUSH_TOPIC_\(topic)"] = Self.topic(topic, suffix: suffix)
        }
        environment["PUSH_CREDENTIALS_KEY"] = Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
        environment.merge(overrides) { $1 }
        executable = try BuiltExecutable(name, environment: environment)
    }

    /// The name `PUSH_TOPIC_<id>` gets for instances started with `suffix`.
    static func topic(_ id: String, suffix: String) -> String {
        "test.shutdown.\(id.lowercased()).\(suffix)"
    }

    /// The five topics an apns-sender started with `suffix` reads, created with `partitions` each.
    static func createAPNSSenderTopics(suffix: String, partitions: Int) async throws {
        for id in ["APNS_MESSAGES", "APNS_RETRIES", "APNS_TRANSACTIONAL_MESSAGES", "APNS_TRANSACTIONAL_RETRIES", "APNS_THROTTLED"] {
            try await StoreTestSupport.createTopic(topic(id, suffix: suffix), partitions: partitions)
        }
    }

    /// Whether a sender's log says each of its three lanes' consumers was given partitions.
    var hasPartitionsInEveryLane: Bool {
        let assigned = log().split(separator: "\n").filter { $0.contains("Kafka partitions assigned") }
        return ["lane=bulk", "lane=transactional", "lane=throttled"].allSatisfy { lane in assigned.contains { $0.contains(lane) } }
    }

    func get(port: Int, _ path: String) async -> Int? {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.timeoutInterval = 15
        guard let (_, response) = try? await URLSession.shared.data(for: request) else { return nil }
        return (response as? HTTPURLResponse)?.statusCode
    }

    /// `/health/live` answers: the process runs its operations endpoints (it need not be ready).
    func waitUntilLive() async throws {
        try await executable.waitUntilReady(port: opsPort, path: "/health/live")
    }

    func signal(_ number: Int32) {
        _ = Glibc.kill(executable.processIdentifier, number)
    }

    /// SIGTERM, without waiting: `exited()` waits.
    func terminate() {
        _ = Glibc.kill(executable.processIdentifier, SIGTERM)
    }

    /// How it ended (waits at most 30 s, then kills it and records an issue).
    func exited() async -> Status {
        await executable.waitForExit(within: .seconds(30))
        return executable.terminationReason == .exit ? .exit(executable.terminationStatus) : .signal(executable.terminationStatus)
    }

    func kill() {
        executable.killIfRunning()
    }

    func log() -> String {
        executable.log()
    }
}
