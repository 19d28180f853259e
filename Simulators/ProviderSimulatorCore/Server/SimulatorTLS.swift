import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The server certificate a simulator presents: loaded from PEM files, or a throw-away CA and a
/// `localhost`/`127.0.0.1` certificate it signs, generated at start so tests need no files.
package struct SimulatorTLS: Sendable {
    /// Leaf certificate first, then intermediates.
    package var certificateChainPEM: String
    package var privateKeyPEM: String
    /// The CA clients must trust; nil when the certificate came from files.
    package var caCertificatePEM: String?

    /// Generates a CA (valid one year) and a server certificate for localhost, 127.0.0.1/::1
    /// and `hostnames` (e.g. the simulator's service name in docker compose).
    package static func generated(commonName: String = "push-channel provider simulator", hostnames: [String] = []) throws -> SimulatorTLS {
        let now = Date()
        let caKey = P256.Signing.PrivateKey()
        let caName = try DistinguishedName {
            CommonName("\(commonName) CA")
            OrganizationName("push-channel")
        }
        let ca = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(caKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86400),
            issuer: caName,
            subject: caName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(caKey.publicKey))
            },
            issuerPrivateKey: .init(caKey)
        )
        let serverKey = P256.Signing.PrivateKey()
        let serverName = try DistinguishedName { CommonName("localhost") }
        let server = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(serverKey.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(364 * 86400),
            issuer: caName,
            subject: serverName,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames(
                    hostnames.map { .dnsName($0) } + [
                        .dnsName("localhost"),
                        .ipAddress(ASN1OctetString(contentBytes: [127, 0, 0, 1])),
                        .ipAddress(ASN1OctetString(contentBytes: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1])),
                    ])
            },
            issuerPrivateKey: .init(caKey)
        )
        return SimulatorTLS(
            certificateChainPEM: try server.serializeAsPEM().pemString,
            privateKeyPEM: serverKey.pemRepresentation,
            caCertificatePEM: try ca.serializeAsPEM().pemString
        )
    }

    /// Reads a PEM certificate chain and its PEM private key.
    package static func files(certificate: String, privateKey: String) throws -> SimulatorTLS {
        SimulatorTLS(
            certificateChainPEM: try String(contentsOfFile: certificate, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: privateKey, encoding: .utf8),
            caCertificatePEM: nil
        )
    }

    /// A server context that offers only `h2` by ALPN (both providers are HTTP/2-only). With
    /// `clientCertificates`, it also asks for a client certificate without requiring one, naming
    /// the accepted CAs; the handler's custom callback (not BoringSSL) then judges the chain.
    func makeServerContext(clientCertificates: ClientCertificateVerifier? = nil) throws -> NIOSSLContext {
        let chain = try NIOSSLCertificate.fromPEMBytes(Array(self.certificateChainPEM.utf8))
        let key = try NIOSSLPrivateKey(bytes: Array(self.privateKeyPEM.utf8), format: .pem)
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.applicationProtocols = ["h2"]
        configuration.minimumTLSVersion = .tlsv12
        if let clientCertificates {
            configuration.certificateVerification = .optionalVerification
            configuration.trustRoots = .certificates(try clientCertificates.nioTrustRoots())
            configuration.sendCANameList = true
        }
        return try NIOSSLContext(configuration: configuration)
    }
}
