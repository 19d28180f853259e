import Crypto
import Foundation
import _CryptoExtras

/// A Google service account as FCM knows it: the public half of the key in the account's JSON
/// key file, plus the fields the OAuth token endpoint checks assertions against.
package struct FCMServiceAccount: Sendable {
    package var clientEmail: String
    package var projectID: String
    /// The `aud` assertions must name (the key file's `token_uri`).
    package var tokenURI: String
    package var publicKey: _RSA.Signing.PublicKey

    package init(clientEmail: String, projectID: String, tokenURI: String, publicKey: _RSA.Signing.PublicKey) {
        self.clientEmail = clientEmail
        self.projectID = projectID
        self.tokenURI = tokenURI
        self.publicKey = publicKey
    }

    /// Reads a service-account JSON key file (`client_email`, `private_key`, `project_id`, `token_uri`).
    package init(keyFile path: String) throws {
        try self.init(json: Data(contentsOf: URL(fileURLWithPath: path)))
    }

    package init(json: Data) throws {
        guard let object = JSON.object(json),
            let clientEmail = object["client_email"] as? String,
            let privateKeyPEM = object["private_key"] as? String,
            let projectID = object["project_id"] as? String
        else {
            throw SimulatorConfigurationError("service account JSON needs client_email, private_key and project_id")
        }
        let privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        self.init(
            clientEmail: clientEmail,
            projectID: projectID,
            tokenURI: object["token_uri"] as? String ?? "https://oauth2.googleapis.com/token",
            publicKey: privateKey.publicKey
        )
    }
}
