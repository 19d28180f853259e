import APNS
import Foundation
import ProviderSimulatorCore
import Testing

extension APNSClientIntegrationTests {
    /// Certificate auth against a simulator that checks TLS client certificates like APNs: the
    /// certificate's UID names the topic, no `authorization` header is sent.
    @Suite("certificate auth")
    struct CertificateAuth {
        @Test("PEM certificate credentials: 200 with apns-id, no provider token, the simulator logs the push under the certificate's topic")
        func pemCertificateSends() async throws {
            let authority = try APNsCertificateAuthority()
            let issued = try authority.issue(topic: Harness.topic)
            try await Harness.withSimulator(keys: [TestKey()], clientCAs: [authority.certificatePEM]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try APNSCredentials.certificate(
                        id: "sha256:test-cert", certificateChainPEM: issued.certificateChainPEM, privateKeyPEM: issued.privateKeyPEM
                    )
                    let request = Harness.request(mId: "mid-cert")
                    let response = try await client.send(request, credentials: credentials, environment: .production)
                    let apnsId = request.apnsId.uuidString.lowercased()
                    #expect(response.status == 200)
                    #expect(response.apnsId == apnsId)
                    #expect(response.outcome == .sent(apnsId: apnsId))

                    let entry = try #require(server.state.notifications(token: request.deviceToken).first)
                    #expect(entry.id == apnsId)
                    #expect(entry.mId == "mid-cert")
                    #expect(entry.topic == Harness.topic)
                    // A VoIP push to the certificate's topic plus the suffix is allowed too.
                    let voip = try await client.send(
                        Harness.request(topic: Harness.topic + ".voip", pushType: "voip"), credentials: credentials, environment: .production)
                    #expect(voip.outcome.isSent)
                }
            }
        }

        @Test("a topic the certificate does not name: 400 TopicDisallowed, the message is rejected, nothing logged")
        func wrongTopic() async throws {
            let authority = try APNsCertificateAuthority()
            let issued = try authority.issue(topic: "com.example.other")
            try await Harness.withSimulator(keys: [TestKey()], clientCAs: [authority.certificatePEM]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try APNSCredentials.certificate(
                        id: "sha256:test-other-app", certificateChainPEM: issued.certificateChainPEM, privateKeyPEM: issued.privateKeyPEM
                    )
                    let response = try await client.send(Harness.request(topic: Harness.topic), credentials: credentials, environment: .production)
                    #expect(response.status == 400)
                    #expect(response.outcome == .rejected(reason: .topicDisallowed))
                    #expect(server.state.counters.accepted == 0)
                }
            }
        }

        @Test("a certificate from another CA, or an expired one: 403 BadCertificate, a credential problem for the operator")
        func untrustedOrExpiredCertificate() async throws {
            let trusted = try APNsCertificateAuthority()
            let stranger = try APNsCertificateAuthority(commonName: "someone else's CA")
            let now = Date()
            let foreign = try stranger.issue(topic: Harness.topic)
            let expired = try trusted.issue(topic: Harness.topic, validity: now.addingTimeInterval(-30 * 86400)...now.addingTimeInterval(-86400))
            try await Harness.withSimulator(keys: [TestKey()], clientCAs: [trusted.certificatePEM]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    for (name, issued) in [("foreign", foreign), ("expired", expired)] {
                        let credentials = try APNSCredentials.certificate(
                            id: "sha256:test-\(name)", certificateChainPEM: issued.certificateChainPEM, privateKeyPEM: issued.privateKeyPEM
                        )
                        let response = try await client.send(Harness.request(), credentials: credentials, environment: .production)
                        #expect(response.status == 403, "\(name)")
                        #expect(response.outcome == .credentialRejected(reason: .badCertificate), "\(name)")
                    }
                    #expect(server.state.counters.accepted == 0)
                    #expect(server.state.counters.byReason["BadCertificate"] == 2)
                }
            }
        }

        @Test("PKCS#12 credentials with a password (made by the system openssl): 200")
        func pkcs12Sends() async throws {
            let authority = try APNsCertificateAuthority()
            let issued = try authority.issue(topic: Harness.topic)
            let password = "p12-" + UUID().uuidString
            let bundle = try PKCS12Export.bundle(issued, password: password)
            try await Harness.withSimulator(keys: [TestKey()], clientCAs: [authority.certificatePEM]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let credentials = try APNSCredentials.pkcs12(id: "sha256:test-p12", base64: bundle, password: password)
                    let request = Harness.request(mId: "mid-p12")
                    let response = try await client.send(request, credentials: credentials, environment: .sandbox)
                    #expect(response.outcome == .sent(apnsId: request.apnsId.uuidString.lowercased()))
                    #expect(server.state.notifications(token: request.deviceToken).first?.mId == "mid-p12")
                }
            }
        }

        @Test("token auth on a simulator with client CAs: a certificate client and a token client share it")
        func tokenClientsStillWork() async throws {
            let key = TestKey()
            let authority = try APNsCertificateAuthority()
            let issued = try authority.issue(topic: Harness.topic)
            try await Harness.withSimulator(keys: [key], clientCAs: [authority.certificatePEM]) { server in
                try await Harness.withClient(Harness.configuration(for: server)) { client in
                    let token = try await client.send(Harness.request(mId: "mid-token"), credentials: try key.credentials(), environment: .production)
                    #expect(token.outcome.isSent)
                    let certificate = try APNSCredentials.certificate(
                        id: "sha256:test-cert", certificateChainPEM: issued.certificateChainPEM, privateKeyPEM: issued.privateKeyPEM
                    )
                    #expect(try await client.send(Harness.request(mId: "mid-cert"), credentials: certificate, environment: .production).outcome.isSent)
                    // Neither a certificate nor a valid token: still MissingProviderToken.
                    let otherKey = TestKey(keyId: "KEY7654321")
                    let unknown = try await client.send(Harness.request(), credentials: try otherKey.credentials(), environment: .production)
                    #expect(unknown.outcome == .credentialRejected(reason: .invalidProviderToken))
                    #expect(server.state.counters.accepted == 2)
                }
            }
        }
    }
}

/// Builds a PKCS#12 (.p12) bundle the way an operator would export one: the system `openssl
/// pkcs12 -export`, in a temporary directory, the password passed through the environment.
enum PKCS12Export {
    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// The base64 of a password-protected .p12 holding `issued`'s certificate and key.
    static func bundle(_ issued: APNsCertificateAuthority.ClientCertificate, password: String) throws -> String {
        guard let openssl = Self.openssl() else {
            throw Failure(description: "openssl not found on PATH: the PKCS#12 test needs the system openssl (Debian: apt-get install openssl)")
        }
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("p12-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let certificate = directory.appendingPathComponent("cert.pem")
        let key = directory.appendingPathComponent("key.pem")
        let output = directory.appendingPathComponent("bundle.p12")
        try issued.certificateChainPEM.write(to: certificate, atomically: true, encoding: .utf8)
        try issued.privateKeyPEM.write(to: key, atomically: true, encoding: .utf8)

        let process = Process()
        process.executableURL = openssl
        process.arguments = [
            "pkcs12", "-export", "-in", certificate.path, "-inkey", key.path, "-out", output.path,
            "-name", "apns-test", "-passout", "env:P12_PASSWORD",
        ]
        process.environment = ["P12_PASSWORD": password, "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw Failure(description: "openssl pkcs12 -export failed (\(process.terminationStatus)): \(message)")
        }
        return try Data(contentsOf: output).base64EncodedString()
    }

    private static func openssl() -> URL? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = URL(fileURLWithPath: String(directory)).appendingPathComponent("openssl")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }
}
