import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import ProviderSimulatorCore
import PushTestSupport
import Synchronization
import Testing
import _CryptoExtras

/// An in-process fcm-simulator over real TLS, its service accounts, and clients pointed at it.
/// Keys are generated at run time: nothing secret is committed.
struct SimulatorFixture {
    /// One project's RSA key and its service-account JSON key file.
    struct Account {
        var project: String
        var key: _RSA.Signing.PrivateKey
        var clientEmail: String { "sender@\(self.project).iam.gserviceaccount.com" }

        /// The key file Google hands out. `token_uri` stays Google's: the client posts to the
        /// simulator through `tokenURLOverride`, the assertion's `aud` is this `token_uri`.
        func json(key: _RSA.Signing.PrivateKey? = nil, dropping field: String? = nil, tokenURI: String = "https://oauth2.googleapis.com/token") -> String {
            var object: [String: String] = [
                "type": "service_account",
                "project_id": self.project,
                "private_key_id": "test-key-1",
                "private_key": (key ?? self.key).pemRepresentation,
                "client_email": self.clientEmail,
                "token_uri": tokenURI,
            ]
            if let field { object[field] = nil }
            return String(decoding: try! JSONSerialization.data(withJSONObject: object), as: UTF8.self)
        }
    }

    /// RSA key generation is the slow part: one key per project for the whole test run.
    static let projectA = Account(project: "project-a", key: try! _RSA.Signing.PrivateKey(keySize: .bits2048))
    static let projectB = Account(project: "project-b", key: try! _RSA.Signing.PrivateKey(keySize: .bits2048))

    static let quietLogger: Logger = {
        var logger = Logger(label: "fcm-client-tests")
        logger.logLevel = .warning
        return logger
    }()

    let server: SimulatorServer
    let control: HTTPClient

    var port: Int { self.server.port }
    var baseURL: String { "https://127.0.0.1:\(self.server.port)" }
    var state: SimulatorState { self.server.state }

    /// Starts a simulator knowing both projects' accounts, runs `body`, shuts everything down.
    /// `maxConcurrentStreams` is 100 by default: swift-nio-http2 finds a stream by a linear
    /// scan of the open ones, costly in the suite's debug build at 1,000.
    static func run<T>(
        tokenLifetime: Int = 3600,
        maxConcurrentStreams: Int = 100,
        _ body: (SimulatorFixture) async throws -> T
    ) async throws -> T {
        let server = try await FCMSimulatorServer.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            fcm: FCMBehaviour.Configuration(
                serviceAccounts: try [Self.projectA, Self.projectB].map {
                    try FCMServiceAccount(json: Data($0.json().utf8))
                },
                accessTokenLifetime: tokenLifetime
            ),
            limits: SimulatorLimits(maxConcurrentStreams: maxConcurrentStreams, logCapacity: 10_000),
            group: MultiThreadedEventLoopGroup.singleton,
            logger: Self.quietLogger
        )
        let control = HTTPClient(
            eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
            configuration: Self.controlConfiguration(caPEM: server.caCertificatePEM!),
            backgroundActivityLogger: Self.quietLogger
        )
        let fixture = SimulatorFixture(server: server, control: control)
        do {
            let result = try await body(fixture)
            try await control.shutdown()
            try await server.shutdown()
            return result
        } catch {
            try? await control.shutdown()
            try? await server.shutdown()
            throw error
        }
    }

    private static func controlConfiguration(caPEM: String) -> HTTPClient.Configuration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.trustRoots = .certificates(try! NIOSSLCertificate.fromPEMBytes(Array(caPEM.utf8)))
        // Above the 10 s default: the control call of a GOAWAY test opens its connection while
        // 2,000 sends load the machine (timed out with six test processes on two cores).
        return HTTPClient.Configuration(tlsConfiguration: tls, timeout: .init(connect: .seconds(30), read: .seconds(60)))
    }

    /// Calls the simulator's control API and returns its JSON answer.
    @discardableResult
    func control(_ method: HTTPMethod, _ path: String, json: String? = nil) async throws -> [String: Any] {
        var request = HTTPClientRequest(url: "\(self.baseURL)\(path)")
        request.method = method
        if let json {
            request.headers.add(name: "content-type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: json))
        }
        let response = try await self.control.execute(request, timeout: .seconds(60))
        let body = try await response.body.collect(upTo: 1 << 22)
        return (try JSONSerialization.jsonObject(with: Data(body.readableBytesView))) as? [String: Any] ?? [:]
    }

    /// Token requests the simulator granted: accepted answers minus the accepted (logged) sends.
    var grantedTokenRequests: Int {
        self.state.counters.accepted - self.state.notifications(limit: Int.max).count
    }

    /// A port nothing listens on (bound, then closed).
    static func closedPort() throws -> Int {
        try EphemeralPort.next()
    }
}
