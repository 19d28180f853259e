import Crypto
import Foundation
import Kafka
import PushCredentials
import PushRegistration
import Testing
import _CryptoExtras

@Suite("Provider credentials through the admin API", .serialized)
struct CredentialTests {
    /// A service-account key file with `token_uri`.
    static func account(_ privateKey: String, tokenURI: String) throws -> String {
        try json([
            "type": "service_account", "project_id": "example", "client_email": "push@example.iam.gserviceaccount.com", "private_key": privateKey,
            "token_uri": tokenURI,
        ])
    }

    static func json(_ object: Any) throws -> String {
        String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self)
    }

    static func object(_ answer: RegistrationHarness.Answer) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any], "\(answer.body)")
    }

    /// A self-signed certificate and key as PEM and as a .p12 (password "p12-secret"), made with openssl.
    static func certificateMaterial() throws -> (certificatePem: String, keyPem: String, p12: Data) {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("apns-cert-\(UUID())")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        func openssl(_ arguments: [String]) throws {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            process.arguments = arguments
            process.currentDirectoryURL = directory
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0, "openssl \(arguments.first ?? "")")
        }
        try openssl(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "key.pem", "-out", "cert.pem", "-days", "30", "-subj", "/CN=com.example.app"])
        try openssl(["pkcs12", "-export", "-inkey", "key.pem", "-in", "cert.pem", "-out", "cert.p12", "-passout", "pass:p12-secret"])
        return (
            try String(contentsOf: directory.appendingPathComponent("cert.pem"), encoding: .utf8),
            try String(contentsOf: directory.appendingPathComponent("key.pem"), encoding: .utf8),
            try Data(contentsOf: directory.appendingPathComponent("cert.p12"))
        )
    }

    @Test("set, read back sealed, rotate; secrets never in answers, events or the database in clear")
    func setAndRotate() async throws {
        try await RegistrationHarness.run { harness in
            let name = "cred-\(UUID().uuidString.prefix(8).lowercased())"
            #expect(try await harness.admin("POST", "/services", json: #"{"name": "\#(name)", "label": "x"}"#).status == 201)
            let ios = try Self.object(
                try await harness.admin("POST", "/services/\(name)/apps", json: #"{"platform": "ios", "label": "i", "bundleId": "com.example.app"}"#))
            let android = try Self.object(
                try await harness.admin("POST", "/services/\(name)/apps", json: #"{"platform": "android", "label": "a", "fcmProjectId": "example"}"#))
            let iosId = try #require((ios["appId"] as? String).flatMap(UUID.init(uuidString:)))
            let androidId = try #require((android["appId"] as? String).flatMap(UUID.init(uuidString:)))

            let firstKey = P256.Signing.PrivateKey().pemRepresentation
            let first = try await harness.admin(
                "PUT", "/apps/\(iosId)/credentials",
                json: try Self.json(["kind": "apns-token", "keyId": "ABC123DEFG", "teamId": "TEAM123456", "privateKey": firstKey]))
            #expect(first.status == 200, "\(first.body)")
            #expect(!first.body.contains("PRIVATE KEY"), "the answer never shows the key")
            let firstFingerprint = try #require(try Self.object(first)["fingerprint"] as? String)
            #expect(firstFingerprint.hasPrefix("sha256:"))
            #expect((try Self.object(first)["details"] as? [String: String]) == ["keyId": "ABC123DEFG", "teamId": "TEAM123456"])

            let store = CredentialStore(
                postgres: harness.postgres, cipher: try CredentialCipher(keyBase64: RegistrationHarness.credentialKey), logger: harness.logger)
            #expect(
                try await store.active(appId: iosId) == .apnsToken(keyId: "ABC123DEFG", teamId: "TEAM123456", privateKeyPEM: firstKey),
                "the sealed secret opens to what was given")
            #expect(
                try await harness.count(
                    "SELECT count(*)::int FROM push.app_credentials WHERE app_id = \(iosId) AND position(convert_to('PRIVATE KEY', 'UTF8') in ciphertext) > 0")
                    == 0, "stored sealed, not in clear")

            // Rotation: new key active at once, the old one kept.
            let secondKey = P256.Signing.PrivateKey().pemRepresentation
            let second = try await harness.admin(
                "PUT", "/apps/\(iosId)/credentials",
                json: try Self.json(["kind": "apns-token", "keyId": "XYZ987WVUT", "teamId": "TEAM123456", "privateKey": secondKey]))
            #expect(second.status == 200)
            let secondFingerprint = try #require(try Self.object(second)["fingerprint"] as? String)
            #expect(secondFingerprint != firstFingerprint)
            #expect(try await store.active(appId: iosId) == .apnsToken(keyId: "XYZ987WVUT", teamId: "TEAM123456", privateKeyPEM: secondKey))
            let listed = try await harness.admin("GET", "/apps/\(iosId)/credentials")
            #expect(listed.status == 200)
            #expect((try JSONSerialization.jsonObject(with: Data(listed.body.utf8)) as? [[String: Any]])?.count == 2)
            #expect(!listed.body.contains("PRIVATE KEY"))
            #expect(
                try await harness.count("SELECT count(*)::int FROM push.apps WHERE app_id = \(iosId) AND credential_fingerprint = \(secondFingerprint)") == 1)

            // Certificates: .p12 with its password, or PEM certificate and key.
            let certificate = try Self.certificateMaterial()
            let wrongPassword = try await harness.admin(
                "PUT", "/apps/\(iosId)/credentials",
                json: try Self.json(["kind": "apns-certificate", "pkcs12": certificate.p12.base64EncodedString(), "password": "wrong"]))
            #expect(wrongPassword.status == 400)
            #expect(!wrongPassword.body.contains("wrong"), "the password is not echoed")
            let p12 = try await harness.admin(
                "PUT", "/apps/\(iosId)/credentials",
                json: try Self.json(["kind": "apns-certificate", "pkcs12": certificate.p12.base64EncodedString(), "password": "p12-secret"]))
            #expect(p12.status == 200, "\(p12.body)")
            #expect((try Self.object(p12)["details"] as? [String: String])?["expiresAt"] != nil)
            let pem = try await harness.admin(
                "PUT", "/apps/\(iosId)/credentials",
                json: try Self.json(["kind": "apns-certificate", "certificatePem": certificate.certificatePem, "privateKeyPem": certificate.keyPem]))
            #expect(pem.status == 200, "\(pem.body)")

            // FCM service account for the Android app.
            let rsa = try _RSA.Signing.PrivateKey(keySize: .bits2048).pemRepresentation
            let account = try Self.json([
                "type": "service_account", "project_id": "example", "client_email": "push@example.iam.gserviceaccount.com", "private_key": rsa,
            ])
            let fcm = try await harness.admin(
                "PUT", "/apps/\(androidId)/credentials", json: try Self.json(["kind": "fcm-service-account", "serviceAccount": account]))
            #expect(fcm.status == 200, "\(fcm.body)")
            #expect((try Self.object(fcm)["details"] as? [String: String]) == ["projectId": "example", "clientEmail": "push@example.iam.gserviceaccount.com"])
            #expect(try await store.active(appId: androidId) == .fcmServiceAccount(json: account))

            // Refusals name the field and echo nothing.
            let refusals: [(UUID, [String: String], String)] = [
                (iosId, ["kind": "apns-token", "keyId": "ABC123DEFG", "teamId": "TEAM123456", "privateKey": "not a key"], "privateKey must be"),
                (iosId, ["kind": "apns-token", "keyId": "short", "teamId": "TEAM123456", "privateKey": firstKey], "keyId must be"),
                (androidId, ["kind": "apns-token", "keyId": "ABC123DEFG", "teamId": "TEAM123456", "privateKey": firstKey], "for iOS apps"),
                (iosId, ["kind": "fcm-service-account", "serviceAccount": account], "for Android apps"),
                (androidId, ["kind": "fcm-service-account", "serviceAccount": #"{"type": "user"}"#], "serviceAccount needs"),
                // The signed assertion goes to token_uri: Google's, over https, only.
                (
                    androidId, ["kind": "fcm-service-account", "serviceAccount": try Self.account(rsa, tokenURI: "http://oauth2.googleapis.com/token")],
                    "token_uri must be"
                ),
                (
                    androidId, ["kind": "fcm-service-account", "serviceAccount": try Self.account(rsa, tokenURI: "https://evil.example/token")],
                    "token_uri must be"
                ),
                (iosId, ["kind": "magic"], "kind must be"),
            ]
            for (appId, body, reason) in refusals {
                let answer = try await harness.admin("PUT", "/apps/\(appId)/credentials", json: try Self.json(body))
                #expect(answer.status == 400, "\(reason)")
                #expect(answer.body.contains(reason), "\(answer.body)")
                #expect(!answer.body.contains("PRIVATE KEY"))
            }

            // No event on push.catalog carries key material.
            let consumer = try KafkaConsumer(
                configuration: KafkaConsumerConfiguration(
                    client: harness.configuration.kafka, groupID: "test.cred-reader.\(UUID())", topics: [harness.configuration.topics.catalog.name],
                    sessionTimeoutMilliseconds: 6_000, heartbeatIntervalMilliseconds: 1_000),
                logger: harness.logger
            )
            var seen: [String] = []
            for try await batch in consumer.batches {
                seen += batch.map { String(decoding: $0.value, as: UTF8.self) }
                if seen.filter({ $0.contains("AppCredentialsSet") }).count >= 5 { break }
            }
            await consumer.close()
            #expect(seen.filter { $0.contains("AppCredentialsSet") }.count == 5)
            #expect(!seen.contains { $0.contains("PRIVATE KEY") || $0.contains("p12-secret") || $0.contains("MII") })
        }
    }
}
