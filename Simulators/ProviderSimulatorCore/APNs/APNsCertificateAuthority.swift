import Crypto
import Foundation
import SwiftASN1
import X509

/// A throw-away CA that issues APNs-style client certificates, for tests and demos of
/// certificate auth: give `certificatePEM` to the simulator (`clientCertificateCAs`,
/// `--client-ca`) and an issued certificate to the client. Keys are P-256 and live only in memory.
package struct APNsCertificateAuthority: Sendable {
    /// A client certificate and its key, as `APNSCredentials.certificate` takes them.
    package struct ClientCertificate: Sendable {
        /// The leaf certificate (PEM); the CA is not included, as clients usually send only the leaf.
        package var certificateChainPEM: String
        /// The leaf's PKCS#8 PEM private key.
        package var privateKeyPEM: String
    }

    /// The CA certificate (PEM) that a simulator trusts.
    package let certificatePEM: String
    private let certificate: Certificate
    private let key: P256.Signing.PrivateKey

    /// Generates a CA valid from an hour ago for one year.
    package init(commonName: String = "push-channel APNs client CA") throws {
        let now = Date()
        let key = P256.Signing.PrivateKey()
        let name = try DistinguishedName {
            CommonName(commonName)
            OrganizationName("push-channel")
        }
        let certificate = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: now.addingTimeInterval(-3600),
            notValidAfter: now.addingTimeInterval(365 * 86400),
            issuer: name,
            subject: name,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: .init(key.publicKey))
            },
            issuerPrivateKey: .init(key)
        )
        self.certificate = certificate
        self.key = key
        self.certificatePEM = try certificate.serializeAsPEM().pemString
    }

    /// Issues a client certificate for `topic` (a bundle id) with Apple's subject layout:
    /// UID = topic, CN = "Apple Push Services: <topic>", OU = team id. Valid from an hour ago for
    /// 30 days unless `validity` says otherwise (a past range makes an expired certificate).
    package func issue(topic: String, teamId: String = "TEAM123456", validity: ClosedRange<Date>? = nil) throws -> ClientCertificate {
        let now = Date()
        let validity = validity ?? now.addingTimeInterval(-3600)...now.addingTimeInterval(30 * 86400)
        let key = P256.Signing.PrivateKey()
        let subject = try DistinguishedName {
            UserID(topic)
            CommonName("Apple Push Services: \(topic)")
            OrganizationalUnitName(teamId)
            OrganizationName("push-channel tests")
        }
        let leaf = try Certificate(
            version: .v3,
            serialNumber: Certificate.SerialNumber(),
            publicKey: .init(key.publicKey),
            notValidBefore: validity.lowerBound,
            notValidAfter: validity.upperBound,
            issuer: self.certificate.subject,
            subject: subject,
            signatureAlgorithm: .ecdsaWithSHA256,
            extensions: try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.clientAuth])
                AuthorityKeyIdentifier(keyIdentifier: try self.certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
            },
            issuerPrivateKey: .init(self.key)
        )
        return ClientCertificate(certificateChainPEM: try leaf.serializeAsPEM().pemString, privateKeyPEM: key.pemRepresentation)
    }
}

/// The UID attribute of a distinguished name, where Apple puts an APNs certificate's bundle id.
private struct UserID: RelativeDistinguishedNameConvertible {
    var value: String

    init(_ value: String) {
        self.value = value
    }

    func makeRDN() throws -> RelativeDistinguishedName {
        RelativeDistinguishedName(.init(type: APNsCertificateTopics.userIDAttribute, utf8String: self.value))
    }
}
