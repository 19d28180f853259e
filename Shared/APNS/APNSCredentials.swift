import Crypto
import Foundation
import NIOSSL

/// The credentials of one pool: a provider-token key (.p8) or a client certificate. `id` names
/// them without the secret (the caller's fingerprint, e.g. "sha256:..."); pools are keyed by
/// (environment, id). `description` never shows key material.
package struct APNSCredentials: Sendable, CustomStringConvertible {
    enum Material: Sendable {
        case token(teamId: String, keyId: String, key: P256.Signing.PrivateKey)
        case certificate(chain: [NIOSSLCertificate], key: NIOSSLPrivateKey)
    }

    package let id: String
    let material: Material

    private init(id: String, material: Material) {
        self.id = id
        self.material = material
    }

    /// Token auth with a .p8 key (PKCS#8 PEM, P-256), its key id and the team id.
    package static func token(id: String, teamId: String, keyId: String, privateKeyPEM: String) throws(APNSClientError) -> APNSCredentials {
        guard !teamId.isEmpty, !keyId.isEmpty else {
            throw .badCredentials("credentials \(id): team id and key id must not be empty")
        }
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw .badCredentials("credentials \(id): the .p8 key of key id \(keyId) is not a PEM P-256 private key")
        }
        return APNSCredentials(id: id, material: .token(teamId: teamId, keyId: keyId, key: key))
    }

    /// Certificate auth: the PEM certificate chain (leaf first) and its PEM private key.
    package static func certificate(id: String, certificateChainPEM: String, privateKeyPEM: String) throws(APNSClientError) -> APNSCredentials {
        let chain: [NIOSSLCertificate]
        let key: NIOSSLPrivateKey
        do {
            chain = try NIOSSLCertificate.fromPEMBytes(Array(certificateChainPEM.utf8))
        } catch {
            throw .badCredentials("credentials \(id): the certificate chain is not PEM")
        }
        guard !chain.isEmpty else { throw .badCredentials("credentials \(id): the certificate chain is empty") }
        do {
            key = try NIOSSLPrivateKey(bytes: Array(privateKeyPEM.utf8), format: .pem)
        } catch {
            throw .badCredentials("credentials \(id): the certificate's private key is not PEM")
        }
        return APNSCredentials(id: id, material: .certificate(chain: chain, key: key))
    }

    /// Certificate auth from a base64 PKCS#12 (.p12) bundle.
    package static func pkcs12(id: String, base64: String, password: String?) throws(APNSClientError) -> APNSCredentials {
        guard let data = Data(base64Encoded: base64, options: .ignoreUnknownCharacters) else {
            throw .badCredentials("credentials \(id): the PKCS#12 bundle is not base64")
        }
        let bundle: NIOSSLPKCS12Bundle
        do {
            bundle = try NIOSSLPKCS12Bundle(buffer: Array(data), passphrase: password.map { Array($0.utf8) })
        } catch {
            throw .badCredentials("credentials \(id): the PKCS#12 bundle does not open (wrong password or format)")
        }
        guard !bundle.certificateChain.isEmpty else {
            throw .badCredentials("credentials \(id): the PKCS#12 bundle holds no certificate")
        }
        return APNSCredentials(id: id, material: .certificate(chain: bundle.certificateChain, key: bundle.privateKey))
    }

    package var description: String {
        switch self.material {
        case .token(let teamId, let keyId, _):
            "APNSCredentials(token, id: \(self.id), team: \(teamId), key: \(keyId))"
        case .certificate:
            "APNSCredentials(certificate, id: \(self.id))"
        }
    }

    /// "TEAM:KEY" for token credentials: the provider token is shared per signing key.
    var signingKeyName: String? {
        if case .token(let teamId, let keyId, _) = self.material { return "\(teamId):\(keyId)" }
        return nil
    }
}
