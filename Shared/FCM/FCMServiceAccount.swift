import Foundation
import PushWire
import _CryptoExtras

/// A Google service-account JSON key, parsed: who signs the OAuth assertion, with which RSA key,
/// for which project. The private key never appears in `description`, `debugDescription` or
/// reflection (`dump`, string interpolation).
package struct FCMServiceAccount: Sendable {
    /// The caller's identifier for this key without the secret (e.g. a fingerprint). Access
    /// tokens are cached per `id`.
    package var id: String
    package var clientEmail: String
    package var projectId: String
    /// The OAuth token endpoint and the assertion's `aud`.
    package var tokenURI: String
    /// `private_key_id`, sent as the JWT `kid` when present.
    package var privateKeyId: String?
    let privateKey: _RSA.Signing.PrivateKey

    /// Google's token endpoint, used when the key file has no `token_uri`.
    package static let defaultTokenURI = "https://oauth2.googleapis.com/token"

    /// Parses the key file's JSON text. Throws `FCMClientError.invalidServiceAccount` naming the
    /// missing or unusable field (never its value).
    package init(id: String, json: String) throws {
        func invalid(_ detail: String) -> FCMClientError {
            FCMClientError(.invalidServiceAccount, "service account \(id): \(detail)", isRetriable: false)
        }
        guard let object = (try? JSONSerialization.jsonObject(with: Data(json.utf8))) as? [String: Any] else {
            throw invalid("the key file is not a JSON object")
        }
        func required(_ field: String) throws -> String {
            guard let value = object[field] else { throw invalid("field \(field) is missing") }
            guard let text = value as? String, !text.isEmpty else { throw invalid("field \(field) is not a non-empty string") }
            return text
        }
        if let type = object["type"] as? String, type != "service_account" {
            throw invalid("field type is \(type), not service_account")
        }
        let clientEmail = try required("client_email")
        let projectId = try required("project_id")
        let privateKeyPEM = try required("private_key")
        let privateKey: _RSA.Signing.PrivateKey
        do {
            privateKey = try _RSA.Signing.PrivateKey(pemRepresentation: privateKeyPEM)
        } catch {
            throw invalid("field private_key is not a PEM RSA private key of 2048 bits or more")
        }
        let tokenURI = try object["token_uri"] == nil ? Self.defaultTokenURI : required("token_uri")
        guard GoogleTokenEndpoint.isAllowed(tokenURI) else {
            throw invalid("field token_uri is not an https URL of Google's token endpoint (\(Self.defaultTokenURI))")
        }
        self.id = id
        self.clientEmail = clientEmail
        self.projectId = projectId
        self.tokenURI = tokenURI
        self.privateKeyId = object["private_key_id"] as? String
        self.privateKey = privateKey
    }
}

extension FCMServiceAccount: CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    package var description: String {
        "FCMServiceAccount(id: \(self.id), clientEmail: \(self.clientEmail), projectId: \(self.projectId))"
    }

    package var debugDescription: String { self.description }

    package var customMirror: Mirror {
        Mirror(self, children: ["id": self.id, "clientEmail": self.clientEmail, "projectId": self.projectId, "tokenURI": self.tokenURI])
    }
}
