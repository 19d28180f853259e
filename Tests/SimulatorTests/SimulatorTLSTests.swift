import Foundation
import ProviderSimulatorCore
import Testing
import X509

@Suite("The simulators' generated TLS certificate")
struct SimulatorTLSTests {
    @Test("names localhost, the loopback addresses and every --hostname; is signed by the CA it hands out")
    func hostnames() throws {
        let tls = try SimulatorTLS.generated(hostnames: ["apns-simulator", "fcm.sandbox.internal"])
        let leaf = try Certificate(pemEncoded: tls.certificateChainPEM)
        let names = try #require(try leaf.extensions.subjectAlternativeNames)
        let dnsNames = names.compactMap { name -> String? in
            if case .dnsName(let dns) = name { return dns }
            return nil
        }
        #expect(dnsNames == ["apns-simulator", "fcm.sandbox.internal", "localhost"])
        #expect(names.count == 5, "two IP addresses too: \(names)")
        let ca = try Certificate(pemEncoded: try #require(tls.caCertificatePEM))
        #expect(leaf.issuer == ca.subject)
        #expect(ca.publicKey.isValidSignature(leaf.signature, for: leaf))
    }
}
