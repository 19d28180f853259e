import APNS
import Crypto
import Foundation
import Logging
import MetricsTestKit
import NIOCore
import NIOPosix
import ProviderSimulatorCore
import PushTestSupport
import Synchronization
import Testing

/// A provider-token key as both sides know it: the sender's credentials and the simulator's
/// registered public key. Made at run time; nothing secret is committed.
struct TestKey {
    var teamId: String
    var keyId: String
    var key = P256.Signing.PrivateKey()

    init(teamId: String = "TEAM123456", keyId: String = "KEY1234567") {
        self.teamId = teamId
        self.keyId = keyId
    }

    func credentials(id: String? = nil) throws -> APNSCredentials {
        try APNSCredentials.token(
            id: id ?? "sha256:test-\(self.teamId)-\(self.keyId)",
            teamId: self.teamId,
            keyId: self.keyId,
            privateKeyPEM: self.key.pemRepresentation
        )
    }

    func simulatorKey() throws -> APNsProviderTokenVerifier.SigningKey {
        try APNsProviderTokenVerifier.SigningKey(teamID: self.teamId, keyID: self.keyId, pem: self.key.publicKey.pemRepresentation)
    }
}

enum Harness {
    static let topic = "com.example.app"

    static let quietLogger: Logger = {
        var logger = Logger(label: "apns-client-tests")
        logger.logLevel = .warning
        return logger
    }()

    /// A 32-byte device token in hex; `prefix` replaces its first characters. Without one the
    /// token starts with "0", so it never hits a simulator fault prefix (dead, bad0, e429, ...).
    static func deviceToken(prefix: String = "0") -> String {
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        return prefix + hex.dropFirst(prefix.count)
    }

    static func request(
        token: String = Harness.deviceToken(),
        topic: String = Harness.topic,
        pushType: String = "alert",
        priority: Int = 10,
        collapseId: String? = nil,
        mId: String = "m-1"
    ) -> APNSRequest {
        APNSRequest(
            deviceToken: token,
            topic: topic,
            pushType: pushType,
            priority: priority,
            expiration: Date().addingTimeInterval(3600),
            collapseId: collapseId,
            payload: ByteBuffer(string: #"{"aps":{"alert":{"title":"Hello","body":"World"}},"_mId":"\#(mId)"}"#)
        )
    }

    /// Runs `body` against an in-process APNs simulator over real TLS, then shuts it down.
    /// `clientCAs` (PEM) turn on certificate auth.
    static func withSimulator<T>(
        keys: [TestKey],
        clientCAs: [String] = [],
        // 100 rather than APNs' 1,000: swift-nio-http2 finds a stream by a linear scan of the
        // open ones, costly in the suite's debug build at 1,000; clients queue past it.
        maxConcurrentStreams: Int = 100,
        _ body: (SimulatorServer) async throws -> T
    ) async throws -> T {
        let server = try await APNsSimulatorServer.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            apns: APNsBehaviour.Configuration(
                allowedTopics: [Self.topic],
                signingKeys: try keys.map { try $0.simulatorKey() },
                clientCertificateCAs: clientCAs
            ),
            limits: SimulatorLimits(maxConcurrentStreams: maxConcurrentStreams, logCapacity: 10_000),
            group: MultiThreadedEventLoopGroup.singleton,
            logger: Self.quietLogger
        )
        do {
            let result = try await body(server)
            try await server.shutdown()
            return result
        } catch {
            try? await server.shutdown()
            throw error
        }
    }

    static func configuration(for server: SimulatorServer, connections: Int = 2) -> APNSClientConfiguration {
        APNSClientConfiguration(
            productionBaseURL: "https://127.0.0.1:\(server.port)",
            sandboxBaseURL: "https://127.0.0.1:\(server.port)",
            trustedCAPEM: server.caCertificatePEM,
            connectionsPerPool: connections,
            connectTimeout: .seconds(10),
            // Not what these tests measure: a request's deadline counts its wait in the client's
            // queue, and a 2,000-send burst through a debug-build client and simulator sharing
            // one process took over 30 s on two cores shared with four other test processes
            // (CI's shards): batches of 100 streams answered every 3 to 4 s, the earliest sends
            // expired still queued. Tests of deadlines set their own.
            requestTimeout: .seconds(180)
        )
    }

    /// Runs `body` with a client, then shuts it down.
    static func withClient<T>(
        _ configuration: APNSClientConfiguration,
        clock: ShiftedClock = ShiftedClock(),
        metrics: TestMetrics = TestMetrics(),
        tokenStore: (any APNSProviderTokenStore)? = nil,
        _ body: (APNSClient) async throws -> T
    ) async throws -> T {
        let client = APNSClient(
            configuration: configuration,
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            logger: Self.quietLogger,
            now: clock.now,
            metricsFactory: metrics,
            tokenStore: tokenStore
        )
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }
}

/// The two ways to send: the async `send`, and the callback `send` the senders use (whose rare
/// paths the caller continues with `send(continuing:)`, as the sender does). Tests of the
/// client's resend rules run through both.
enum SendAPI: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case async
    case callback

    var testDescription: String { "through the \(rawValue) send" }
}

extension APNSClient {
    func send(_ request: APNSRequest, credentials: APNSCredentials, environment: APNSEnvironment, via api: SendAPI) async throws(APNSClientError)
        -> APNSResponse
    {
        switch api {
        case .async:
            return try await self.send(request, credentials: credentials, environment: environment)
        case .callback:
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<APNSClient.CallbackResult, Never>) in
                self.send(request, credentials: credentials, environment: environment) { continuation.resume(returning: $0) }
            }
            switch result {
            case .answered(let response): return response
            case .failed(let error): throw error
            case .needsAsync(let pending): return try await self.send(continuing: pending)
            }
        }
    }
}
