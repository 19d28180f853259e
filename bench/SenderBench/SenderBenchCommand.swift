import ArgumentParser
import Crypto
import FCM
import Foundation
import Kafka
import Logging
import NIOCore
import NIOHPACK
import NIOPosix
import NIOSSL
import PostgresNIO
import PushCredentials
import PushEvents
import PushHTTP2
import PushRuntime
import PushSchema
import PushStore
import Synchronization

/// `sender-bench setup`: what bench/senders.sh needs before it times a sender. Creates a service
/// and one app whose active credential is the given key (sealed as the admin API seals it),
/// publishes N message records on the message topic exactly as the planner does (the project's
/// own event types and producer), and writes the request h2load sends for the ceiling (the same
/// payload and headers). Settings come from the environment like every service's
/// (POSTGRES_URL, KAFKA_BROKERS, PUSH_TOPIC_*, PUSH_CREDENTIALS_KEY).
@main
struct SenderBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sender-bench",
        abstract: "Prepares a sender benchmark run (bench/senders.sh).",
        subcommands: [Setup.self, Client.self]
    )
}

struct Setup: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create the app and credential, publish the message records, write h2load's request.")

    @Option(help: "apns or fcm.") var provider: String
    @Option(help: "Message records to publish.") var messages: Int
    @Option(help: "APNs .p8 key file, or FCM service-account JSON file.") var credential: String
    @Option(help: "APNs team id.") var teamId = "TEAMBENCH1"
    @Option(help: "APNs key id.") var keyId = "KEYBENCH01"
    @Option(help: "iOS bundle id (apns-topic).") var bundleId = "com.example.bench"
    @Option(help: "Directory for h2load's request: payload.json, headers.txt (and assertion.txt for FCM).") var out: String

    func run() async throws {
        var logger = Logger(label: "sender-bench")
        logger.logLevel = .warning
        let environment = EnvironmentSettings()
        let configuration = try RuntimeConfiguration(service: "sender-bench", defaultOpsPort: 0, environment: environment)
        guard let cipher = try CredentialCipher.fromEnvironment(environment.values) else {
            throw ValidationError("PUSH_CREDENTIALS_KEY is not set")
        }
        let secretFile = try String(contentsOfFile: credential, encoding: .utf8)
        let postgres = PostgresClient(configuration: configuration.postgres.clientConfiguration, backgroundLogger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await postgres.run() }
            defer { group.cancelAll() }
            try await Migrator(client: postgres, logger: logger).migrate(SchemaMigrations.all)
            let appId = UUID()
            let run = String(appId.uuidString.prefix(8)).lowercased()
            let serviceId = UUID()
            try await postgres.query(
                "INSERT INTO push.services (service_id, name, label, created_at, updated_at) VALUES (\(serviceId), \("bench-\(run)"), 'Sender benchmark', now(), now())",
                logger: logger
            )
            let secret: ProviderSecret
            if provider == "apns" {
                try await postgres.query(
                    """
                    INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, bundle_id, created_at, updated_at)
                    VALUES (\(appId), \(serviceId), \("bench-\(run)"), 'ios', 'production', 'Benchmark iOS app', \(bundleId), now(), now())
                    """,
                    logger: logger
                )
                secret = .apnsToken(keyId: keyId, teamId: teamId, privateKeyPEM: secretFile)
            } else {
                let account = try FCMServiceAccount(id: "bench", json: secretFile)
                try await postgres.query(
                    """
                    INSERT INTO push.apps (app_id, service_id, integration_key, platform, environment, label, fcm_project_id, created_at, updated_at)
                    VALUES (\(appId), \(serviceId), \("bench-\(run)"), 'android', 'production', 'Benchmark Android app', \(account.projectId), now(), now())
                    """,
                    logger: logger
                )
                secret = .fcmServiceAccount(json: secretFile)
                try account.assertion(now: Date()).write(toFile: "\(out)/assertion.txt", atomically: true, encoding: .utf8)
            }
            // Stored as the admin API stores it (sealed, bound to the app).
            let credentialId = UUID()
            let fingerprint = "sha256:" + SHA256.hash(data: Data(secretFile.utf8)).map { String(format: "%02x", $0) }.joined()
            try await CredentialStore(postgres: postgres, cipher: cipher, logger: logger)
                .store(secret, fingerprint: fingerprint, details: [:], appId: appId, credentialId: credentialId)
            try await postgres.query(
                "UPDATE push.apps SET credential_id = \(credentialId), credential_kind = \(secret.kind), credential_fingerprint = \(fingerprint), credential_updated_at = now() WHERE app_id = \(appId)",
                logger: logger
            )
            try await publish(
                configuration: configuration, appId: appId, projectId: provider == "fcm" ? try FCMServiceAccount(id: "bench", json: secretFile).projectId : nil,
                logger: logger)
            print("app \(appId) (\(provider)), \(messages) records published")
        }
    }

    /// The planner's shape of a message: an alert with title, body and a custom variable (APNs
    /// about 230 bytes of payload, FCM a data message of about the same size).
    func publish(configuration: RuntimeConfiguration, appId: UUID, projectId: String?, logger: Logger) async throws {
        let producer = try KafkaProducer(configuration: configuration.producer, logger: logger)
        // Integer ids as the planner writes them (`_dId`, `_mId`), from the clock so runs differ.
        let deliveryId = String(Int(Date().timeIntervalSince1970) % 1_000_000_000)
        let firstBroadLogId = Int32(Int(Date().timeIntervalSince1970 * 10) % 1_000_000_000)
        let validUntil = Date().addingTimeInterval(24 * 3600)
        let batch = 10_000
        var published = 0
        var firstPayload: String?
        while published < messages {
            let records = try (published..<min(published + batch, messages)).map { index -> KafkaProducerRecord in
                let messageId = UUID()
                let broadLogId = firstBroadLogId + Int32(index)
                let id = String(broadLogId)
                if let projectId {
                    // FCM-like tokens (152 characters); no simulator fault prefix.
                    let token = "bench" + String(repeating: String(format: "%08x", index), count: 19).prefix(147)
                    let message =
                        #"{"token":"\#(token)","data":{"_mId":"\#(id)","_dId":"\#(deliveryId)","_msg":"Hello Ada, your order #\#(index) has shipped and will arrive tomorrow.","title":"Your order is on its way","url":"https://example.com/orders/\#(index)"},"android":{"priority":"high","ttl":"86400s"}}"#
                    if firstPayload == nil { firstPayload = #"{"message":\#(message)}"# }
                    let planned = FCMMessagePlanned(
                        messageId: messageId, broadLogId: broadLogId, deliveryId: deliveryId, appId: appId, registrationToken: token, projectId: projectId,
                        credential: nil, message: message, validUntil: validUntil, attempt: 1, plannedAt: Date()
                    )
                    return try KafkaProducerRecord(
                        topic: configuration.topics.fcmMessages.name, event: EventEnvelope(key: "\(appId.uuidString.lowercased()):\(token)", payload: planned))
                } else {
                    // 64 hex digits starting with "f": never a simulator fault prefix (dead, bad0, e5xx).
                    let token = "f" + String(repeating: String(format: "%08x", index), count: 8).dropFirst()
                    let payload =
                        #"{"aps":{"alert":{"title":"Your order is on its way","body":"Hello Ada, your order #\#(index) has shipped and will arrive tomorrow."},"sound":"default"},"url":"https://example.com/orders/\#(index)","_mId":"\#(id)","_dId":"\#(deliveryId)"}"#
                    if firstPayload == nil { firstPayload = payload }
                    let planned = APNSMessagePlanned(
                        messageId: messageId, broadLogId: broadLogId, deliveryId: deliveryId, appId: appId, registrationToken: token, environment: "production",
                        credential: nil, topic: bundleId, pushType: "alert", priority: 10, collapseId: nil,
                        payload: payload, validUntil: validUntil, attempt: 1, plannedAt: Date()
                    )
                    return try KafkaProducerRecord(
                        topic: configuration.topics.apnsMessages.name, event: EventEnvelope(key: "\(appId.uuidString.lowercased()):\(token)", payload: planned))
                }
            }
            for result in await producer.send(records) { _ = try result.get() }
            published += records.count
        }
        await producer.close()
        try (firstPayload ?? "").write(toFile: "\(out)/payload.json", atomically: true, encoding: .utf8)
        // h2load's headers, as the sender's clients send them (the bearer is set by the script).
        let headers =
            projectId != nil
            ? ["content-type: application/json; charset=UTF-8"]
            : ["apns-topic: \(bundleId)", "apns-push-type: alert", "apns-priority: 10", "apns-expiration: \(Int(validUntil.timeIntervalSince1970))"]
        try (headers.joined(separator: "\n") + "\n").write(toFile: "\(out)/headers.txt", atomically: true, encoding: .utf8)
    }
}

/// `sender-bench client`: the project's HTTP/2 client alone (`HTTP2Endpoint`, as the APNs and FCM
/// clients use it: one endpoint per connection, each answer's callback sending the next request) sending
/// the request h2load sends, with the same connections and streams. No Kafka, no decoding, no
/// result events: the rate the sender could reach if everything but HTTP/2 cost nothing, which
/// splits the gap between the sender and h2load in two (docs/benchmarks.md).
struct Client: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Send N requests with the project's HTTP/2 client; print the rate and CPU.")

    @Option(help: "https://host:port/path") var url: String
    @Option(help: "PEM file of the CA that signed the server's certificate.") var ca: String
    @Option(name: .customLong("header"), help: "A request header, \"name: value\" (repeatable).") var headers: [String] = []
    @Option(help: "File whose content is the request body.") var payload: String
    @Option(help: "Requests to send.") var requests: Int
    @Option(help: "Connections.") var connections: Int
    @Option(help: "Streams in flight per connection.") var streams: Int

    func run() async throws {
        guard let origin = HTTP2Origin(url: url), let pathStart = url.dropFirst("https://".count).firstIndex(of: "/") else {
            throw ValidationError("--url must be https://host:port/path")
        }
        let path = String(url[pathStart...])
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(ca))
        let context = try HTTP2Endpoint.makeSSLContext(tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let endpoints = (0..<connections).map { _ in
            HTTP2Endpoint(configuration: .init(origin: origin, sslContext: context), eventLoop: group.next())
        }
        var fields = HPACKHeaders()
        for header in headers {
            guard let colon = header.firstIndex(of: ":") else { throw ValidationError("--header \(header): expected \"name: value\"") }
            fields.add(name: header[..<colon].lowercased(), value: header[header.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let request = HTTP2Request(
            path: path, headers: fields, body: ByteBuffer(bytes: try Data(contentsOf: URL(fileURLWithPath: payload))), pathIndexing: .nonIndexable)
        // One request per connection first: the connections are open before the clock starts.
        for endpoint in endpoints { _ = try await endpoint.send(request, deadline: .now() + .seconds(10)) }

        let counters = Counters()
        let cpuBefore = Self.cpuSeconds()
        let started = ContinuousClock.now
        // As the senders send: no task per request, the answer's callback sends the next one.
        let deadline = TimeAmount.seconds(30)
        await withCheckedContinuation { (finished: CheckedContinuation<Void, Never>) in
            @Sendable func sendNext(on endpoint: HTTP2Endpoint) {
                guard counters.next.wrappingAdd(1, ordering: .relaxed).oldValue < requests else { return }
                endpoint.send(request, deadline: .now() + deadline) { result in
                    if case .success(let response) = result, (200..<300).contains(response.status) {
                        counters.succeeded.wrappingAdd(1, ordering: .relaxed)
                    }
                    if counters.answered.wrappingAdd(1, ordering: .relaxed).newValue == requests {
                        finished.resume()
                    } else {
                        sendNext(on: endpoint)
                    }
                }
            }
            for worker in 0..<(connections * streams) { sendNext(on: endpoints[worker % connections]) }
        }
        let elapsed = ContinuousClock.now - started
        let cpu = Self.cpuSeconds() - cpuBefore
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        for endpoint in endpoints { try? await endpoint.shutdown().get() }
        let ok = counters.succeeded.load(ordering: .relaxed)
        guard ok == requests else { throw ValidationError("\(ok) of \(requests) answers were 2xx") }
        // Parsed by bench/senders.sh.
        print(String(format: "client: %d requests in %.3f s, %d req/s, CPU %.2f s", requests, seconds, Int(Double(requests) / seconds), cpu))
    }

    final class Counters: Sendable {
        let next = Atomic(0)
        let answered = Atomic(0)
        let succeeded = Atomic(0)
    }

    /// User and system CPU of this process.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }
}
