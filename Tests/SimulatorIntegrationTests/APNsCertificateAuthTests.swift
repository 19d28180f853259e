import Crypto
import Foundation
import ProviderSimulatorCore
import Testing

@Suite("APNs simulator: TLS client-certificate auth")
struct APNsCertificateAuthTests {
    let key = P256.Signing.PrivateKey()

    func start(clientCAs: [String]) async throws -> SimulatorServer {
        let signingKey = try APNsProviderTokenVerifier.SigningKey(teamID: Fixtures.teamID, keyID: Fixtures.keyID, pem: self.key.pemRepresentation)
        return try await Fixtures.startAPNs(keys: [signingKey], clientCAs: clientCAs)
    }

    func push(on client: H2TestClient, token: String? = nil, topic: String? = Fixtures.topic, mId: String = "m-1") async throws -> TestResponse {
        var headers = Fixtures.apnsHeaders(token: token, topic: topic ?? "")
        if topic == nil { headers.removeAll { $0.0 == "apns-topic" } }
        return try await client.send("POST", "/3/device/\(Fixtures.deviceToken())", headers: headers, json: Fixtures.alertPayload(mId: mId))
    }

    @Test("a trusted certificate needs no authorization header; without apns-topic its UID is the topic")
    func trustedCertificate() async throws {
        let authority = try APNsCertificateAuthority()
        let certificate = try authority.issue(topic: Fixtures.topic)
        try await self.start(clientCAs: [authority.certificatePEM]).run { simulator in
            let client = try await simulator.client(certificate: certificate)
            #expect(try await self.push(on: client, mId: "with-topic").status == 200)
            #expect(try await self.push(on: client, topic: nil, mId: "default-topic").status == 200)
            #expect(simulator.state.notifications(mId: "default-topic").first?.topic == Fixtures.topic)

            let other = try await self.push(on: client, topic: "com.example.other")
            #expect(other.status == 400 && other.reason == "TopicDisallowed")
            let voipWithoutSuffix = try await client.send(
                "POST", "/3/device/\(Fixtures.deviceToken())",
                headers: [("apns-topic", Fixtures.topic), ("apns-push-type", "voip")], json: Fixtures.alertPayload()
            )
            #expect(voipWithoutSuffix.status == 400 && voipWithoutSuffix.reason == "BadTopic")
            await client.close()
        }
    }

    @Test("untrusted and expired certificates complete the handshake, then every request gets 403 BadCertificate")
    func rejectedCertificates() async throws {
        let authority = try APNsCertificateAuthority()
        let now = Date()
        let foreign = try APNsCertificateAuthority(commonName: "another CA").issue(topic: Fixtures.topic)
        let expired = try authority.issue(topic: Fixtures.topic, validity: now.addingTimeInterval(-7200)...now.addingTimeInterval(-3600))
        try await self.start(clientCAs: [authority.certificatePEM]).run { simulator in
            for certificate in [foreign, expired] {
                let client = try await simulator.client(certificate: certificate)
                let answer = try await self.push(on: client)
                #expect(answer.status == 403 && answer.reason == "BadCertificate")
                // A provider token does not rescue a connection with a bad certificate.
                let withToken = try await self.push(on: client, token: try Fixtures.providerToken(key: self.key))
                #expect(withToken.status == 403 && withToken.reason == "BadCertificate")
                await client.close()
            }
            #expect(simulator.state.counters.accepted == 0)
        }
    }

    @Test("clients without a certificate on the same port: token auth as before, MissingProviderToken without one")
    func clientsWithoutCertificate() async throws {
        let authority = try APNsCertificateAuthority()
        try await self.start(clientCAs: [authority.certificatePEM]).run { simulator in
            let client = try await simulator.client()
            let missing = try await self.push(on: client)
            #expect(missing.status == 403 && missing.reason == "MissingProviderToken")
            #expect(try await self.push(on: client, token: try Fixtures.providerToken(key: self.key)).status == 200)
            await client.close()
        }
    }
}
