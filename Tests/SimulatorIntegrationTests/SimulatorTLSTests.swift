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

@Suite("The simulators' shared command-line options")
struct SimulatorOptionsTests {
    @Test("--latency-ms is the start-up fault plan's latency; a negative value is refused; --hostname needs a generated certificate")
    func options() throws {
        #expect(try SimulatorServerOptions.parse(["--latency-ms", "40"]).baselineFaults.latencyMs == 40)
        #expect(try SimulatorServerOptions.parse([]).baselineFaults == FaultPlan())
        #expect(throws: (any Error).self) { try SimulatorServerOptions.parse(["--latency-ms", "-1"]) }
        #expect(throws: (any Error).self) { try SimulatorServerOptions.parse(["--cert", "c.pem", "--cert-key", "k.pem", "--hostname", "x"]) }
    }
}
