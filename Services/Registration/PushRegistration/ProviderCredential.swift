import Crypto
import Foundation
import NIOSSL
import PushCredentials
import PushEvents
import PushWire
import _CryptoExtras

/// Body of `PUT /admin/v1/apps/{id}/credentials`: one of
/// - `{"kind": "apns-token", "keyId", "teamId", "privateKey": "<.p8 PEM>"}`
/// - `{"kind": "apns-certificate", "pkcs12": "<base64 .p12>", "password"}` or
///   `{"kind": "apns-certificate", "certificatePem", "privateKeyPem"}`
/// - `{"kind": "fcm-service-account", "serviceAccount": "<the service-account JSON, as a string>"}`
package struct CredentialInput: Codable, Sendable {
    package var kind: String
    package var keyId: String?
    package var teamId: String?
    package var privateKey: String?
    package var pkcs12: String?
    package var password: String?
    package var certificatePem: String?
    package var privateKeyPem: String?
    package var serviceAccount: String?
}

/// Credentials as the admin API shows them: never the secret.
package struct CredentialOutput: Codable, Sendable, Equatable {
    package var credentialId: UUID
    package var appId: UUID
    package var kind: String
    package var fingerprint: String
    package var details: [String: String]
    package var createdAt: Date?
}

/// Validated credentials: the typed secret to seal and what may be shown.
struct ValidatedCredential {
    var secret: ProviderSecret
    var kind: String { secret.kind }
    var fingerprint: String
    var details: [String: String]

    /// Checks the material for the app's platform; errors name the field, never echo it.
    static func validate(_ input: CredentialInput, platform: Platform) throws(RegistrationError) -> ValidatedCredential {
        var details: [String: String] = [:]
        let material: Data
        let secret: ProviderSecret
        switch input.kind {
        case "apns-token":
            guard platform == .ios else { throw .badRequest("apns-token credentials are for iOS apps") }
            guard let keyId = input.keyId, keyId.count == 10, keyId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw .badRequest("keyId must be the 10-character APNs key id")
            }
            guard let teamId = input.teamId, teamId.count == 10, teamId.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else {
                throw .badRequest("teamId must be the 10-character Apple team id")
            }
            guard let pem = input.privateKey, (try? P256.Signing.PrivateKey(pemRepresentation: pem)) != nil else {
                throw .badRequest("privateKey must be the .p8 PEM of a P-256 key")
            }
            details = ["keyId": keyId, "teamId": teamId]
            material = Data(pem.utf8)
            secret = .apnsToken(keyId: keyId, teamId: teamId, privateKeyPEM: pem)
        case "apns-certificate":
            guard platform == .ios else { throw .badRequest("apns-certificate credentials are for iOS apps") }
            if let encoded = input.pkcs12 {
                guard let bytes = Data(base64Encoded: encoded) else { throw .badRequest("pkcs12 must be base64") }
                let bundle: NIOSSLPKCS12Bundle
                do {
                    bundle = try NIOSSLPKCS12Bundle(buffer: Array(bytes), passphrase: Array((input.password ?? "").utf8))
                } catch {
                    throw .badRequest("pkcs12 could not be opened with this password")
                }
                guard let leaf = bundle.certificateChain.first else { throw .badRequest("pkcs12 holds no certificate") }
                details = certificateDetails(leaf)
                material = bytes
                secret = .apnsCertificatePKCS12(base64: encoded, password: input.password ?? "")
            } else {
                guard let certificatePem = input.certificatePem, let keyPem = input.privateKeyPem,
                    let certificate = try? NIOSSLCertificate(bytes: Array(certificatePem.utf8), format: .pem),
                    (try? NIOSSLPrivateKey(bytes: Array(keyPem.utf8), format: .pem)) != nil
                else { throw .badRequest("give pkcs12 and password, or certificatePem and privateKeyPem") }
                details = certificateDetails(certificate)
                material = Data((certificatePem + keyPem).utf8)
                secret = .apnsCertificatePEM(certificateChainPEM: certificatePem, privateKeyPEM: keyPem)
            }
        case "fcm-service-account":
            guard platform == .android else { throw .badRequest("fcm-service-account credentials are for Android apps") }
            guard let text = input.serviceAccount,
                let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any]
            else { throw .badRequest("serviceAccount must be the service-account JSON key file's content") }
            guard object["type"] as? String == "service_account", let project = object["project_id"] as? String,
                let email = object["client_email"] as? String, let key = object["private_key"] as? String
            else { throw .badRequest("serviceAccount needs type service_account, project_id, client_email and private_key") }
            guard (try? _RSA.Signing.PrivateKey(pemRepresentation: key)) != nil else {
                throw .badRequest("serviceAccount private_key is not an RSA private key in PEM")
            }
            if let tokenURI = object["token_uri"] {
                guard let text = tokenURI as? String, GoogleTokenEndpoint.isAllowed(text) else {
                    throw .badRequest("serviceAccount token_uri must be an https URL of Google's token endpoint (https://oauth2.googleapis.com/token)")
                }
            }
            details = ["projectId": project, "clientEmail": email]
            material = Data(text.utf8)
            secret = .fcmServiceAccount(json: text)
        default:
            throw .badRequest("kind must be apns-token, apns-certificate or fcm-service-account")
        }
        let fingerprint = "sha256:" + SHA256.hash(data: material).map { String(format: "%02x", $0) }.joined()
        return ValidatedCredential(secret: secret, fingerprint: fingerprint, details: details)
    }

    static func certificateDetails(_ certificate: NIOSSLCertificate) -> [String: String] {
        ["expiresAt": Date(timeIntervalSince1970: TimeInterval(certificate.notValidAfter)).formatted(.iso8601)]
    }
}
