import Crypto
import Foundation
import Logging
import NIOPosix
import ProviderSimulatorCore
import PushWire
import _CryptoExtras

/// Keys, tokens and simulators made at run time: nothing secret is committed.
enum Fixtures {
    static let teamID = "TEAM123456"
    static let keyID = "KEY1234567"
    static let topic = "com.example.app"

    /// A 32-byte device token in hex; `prefix` replaces its first characters.
    static func deviceToken(prefix: String = "") -> String {
        let hex = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        return prefix + hex.dropFirst(prefix.count)
    }

    /// An APNs provider token (ES256) as a sender would build it. `iatJSON` replaces the `iat`
    /// claim's JSON text (`"\"1700000000\""` for the string form APNSwift sends).
    static func providerToken(
        key: P256.Signing.PrivateKey,
        teamID: String = Self.teamID,
        keyID: String = Self.keyID,
        issuedAt: Date = Date(),
        iatJSON: String? = nil
    ) throws -> String {
        let header = Base64URL.encode(Data(#"{"alg":"ES256","kid":"\#(keyID)"}"#.utf8))
        let iat = iatJSON ?? String(Int(issuedAt.timeIntervalSince1970))
        let claims = Base64URL.encode(Data(#"{"iss":"\#(teamID)","iat":\#(iat)}"#.utf8))
        let signature = try key.signature(for: Data("\(header).\(claims)".utf8))
        return "\(header).\(claims).\(Base64URL.encode(signature.rawRepresentation))"
    }

    /// The headers of a valid alert push.
    static func apnsHeaders(token: String?, topic: String = Self.topic, extra: [(String, String)] = []) -> [(String, String)] {
        var headers: [(String, String)] = [("apns-topic", topic), ("apns-push-type", "alert"), ("apns-priority", "10")]
        if let token { headers.insert(("authorization", "bearer \(token)"), at: 0) }
        return headers + extra
    }

    static func alertPayload(mId: String = "m-1") -> String {
        #"{"aps":{"alert":{"title":"Hello","body":"World"}},"_mId":"\#(mId)"}"#
    }

    /// Writes a P-256 key as a .p8 file (PKCS#8 PEM, as Apple ships it) and returns its path.
    static func writeP8(_ key: P256.Signing.PrivateKey) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8").path
        try key.pemRepresentation.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func startAPNs(
        keys: [APNsProviderTokenVerifier.SigningKey],
        topics: Set<String> = [Self.topic],
        clientCAs: [String] = [],
        maxConcurrentStreams: Int = 100
    ) async throws -> SimulatorServer {
        try await APNsSimulatorServer.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            apns: APNsBehaviour.Configuration(allowedTopics: topics, signingKeys: keys, clientCertificateCAs: clientCAs),
            limits: SimulatorLimits(maxConcurrentStreams: maxConcurrentStreams, logCapacity: 1000),
            group: MultiThreadedEventLoopGroup.singleton,
            logger: Self.quietLogger
        )
    }

    static let quietLogger: Logger = {
        var logger = Logger(label: "simulator-tests")
        logger.logLevel = .warning
        return logger
    }()

    // MARK: FCM

    struct ServiceAccount {
        var key: _RSA.Signing.PrivateKey
        var clientEmail: String
        var projectID: String
        var tokenURI = "https://oauth2.googleapis.com/token"

        /// The JSON key file Google hands out, built from a fresh RSA-2048 key.
        var keyFileJSON: Data {
            let object: [String: String] = [
                "type": "service_account",
                "project_id": self.projectID,
                "private_key_id": "test",
                "private_key": self.key.pemRepresentation,
                "client_email": self.clientEmail,
                "token_uri": self.tokenURI,
            ]
            return try! JSONSerialization.data(withJSONObject: object)
        }

        static func make(project: String) throws -> ServiceAccount {
            ServiceAccount(
                key: try _RSA.Signing.PrivateKey(keySize: .bits2048),
                clientEmail: "sender@\(project).iam.gserviceaccount.com",
                projectID: project
            )
        }

        /// A signed OAuth assertion; every claim can be overridden to provoke a rejection.
        func assertion(
            audience: String? = nil,
            scope: String = "https://www.googleapis.com/auth/firebase.messaging",
            issuedAt: Date = Date(),
            lifetime: TimeInterval = 3600,
            signingKey: _RSA.Signing.PrivateKey? = nil
        ) throws -> String {
            let header = Base64URL.encode(Data(#"{"alg":"RS256","typ":"JWT"}"#.utf8))
            let claims: [String: Any] = [
                "iss": self.clientEmail,
                "scope": scope,
                "aud": audience ?? self.tokenURI,
                "iat": Int(issuedAt.timeIntervalSince1970),
                "exp": Int(issuedAt.timeIntervalSince1970 + lifetime),
            ]
            let claimsPart = Base64URL.encode(try JSONSerialization.data(withJSONObject: claims))
            let signature = try (signingKey ?? self.key).signature(
                for: Data("\(header).\(claimsPart)".utf8),
                padding: .insecurePKCS1v1_5
            )
            return "\(header).\(claimsPart).\(Base64URL.encode(signature.rawRepresentation))"
        }
    }

    static func startFCM(accounts: [ServiceAccount], tokenLifetime: Int = 3600) async throws -> SimulatorServer {
        try await FCMSimulatorServer.start(
            server: SimulatorServer.Configuration(tls: try SimulatorTLS.generated()),
            fcm: FCMBehaviour.Configuration(
                serviceAccounts: try accounts.map { try FCMServiceAccount(json: $0.keyFileJSON) },
                accessTokenLifetime: tokenLifetime
            ),
            limits: SimulatorLimits(maxConcurrentStreams: 100, logCapacity: 1000),
            group: MultiThreadedEventLoopGroup.singleton,
            logger: Self.quietLogger
        )
    }

    static func tokenForm(assertion: String, grantType: String = "urn:ietf:params:oauth:grant-type:jwt-bearer") -> [UInt8] {
        Array("grant_type=\(grantType.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)&assertion=\(assertion)".utf8)
    }
}

extension SimulatorServer {
    /// Runs `body` against this simulator and shuts it down afterwards, whatever happens.
    func run<T>(_ body: (SimulatorServer) async throws -> T) async throws -> T {
        do {
            let result = try await body(self)
            try await self.shutdown()
            return result
        } catch {
            try? await self.shutdown()
            throw error
        }
    }

    func client(certificate: APNsCertificateAuthority.ClientCertificate? = nil) async throws -> H2TestClient {
        try await H2TestClient.connect(port: self.port, caPEM: self.caCertificatePEM!, clientCertificate: certificate)
    }
}
