import Foundation

/// An app's provider secret, as the registration service seals it into `push.app_credentials` and
/// the senders open it: one case per kind of credential, each with exactly the fields that kind
/// needs. The admin API's input (`CredentialInput`, every field optional) is checked and turned
/// into one of these before it is stored.
///
/// Sealed form: the JSON object the admin API accepted (`{"kind": "apns-token", "keyId", "teamId",
/// "privateKey"}`, `{"kind": "apns-certificate", "pkcs12", "password"}` or `{"kind":
/// "apns-certificate", "certificatePem", "privateKeyPem"}`, `{"kind": "fcm-service-account",
/// "serviceAccount"}`), so rows sealed before this type existed open the same way.
package enum ProviderSecret: Sendable, Equatable {
    /// An APNs signing key (.p8): provider tokens (JWT) are signed with it.
    case apnsToken(keyId: String, teamId: String, privateKeyPEM: String)
    /// An APNs client certificate as a PKCS#12 bundle (base64) and its password ("" when none).
    case apnsCertificatePKCS12(base64: String, password: String)
    /// An APNs client certificate chain and its private key, both PEM.
    case apnsCertificatePEM(certificateChainPEM: String, privateKeyPEM: String)
    /// A Google service account's JSON key file, as downloaded.
    case fcmServiceAccount(json: String)

    /// `apns-token`, `apns-certificate` or `fcm-service-account` (`push.app_credentials.kind`).
    package var kind: String {
        switch self {
        case .apnsToken: "apns-token"
        case .apnsCertificatePKCS12, .apnsCertificatePEM: "apns-certificate"
        case .fcmServiceAccount: "fcm-service-account"
        }
    }
}

extension ProviderSecret: Codable {
    private enum Key: String, CodingKey {
        case kind, keyId, teamId, privateKey, pkcs12, password, certificatePem, privateKeyPem, serviceAccount
    }

    /// A sealed secret that does not hold what its kind needs; names the kind, never a value.
    package struct Incomplete: Error, CustomStringConvertible {
        package var kind: String
        package var description: String { "sealed \(kind) credential lacks a field its kind needs" }
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        let kind = try container.decode(String.self, forKey: .kind)
        func field(_ key: Key) throws -> String? { try container.decodeIfPresent(String.self, forKey: key) }
        switch kind {
        case "apns-token":
            guard let keyId = try field(.keyId), let teamId = try field(.teamId), let key = try field(.privateKey) else { throw Incomplete(kind: kind) }
            self = .apnsToken(keyId: keyId, teamId: teamId, privateKeyPEM: key)
        case "apns-certificate":
            if let pkcs12 = try field(.pkcs12) {
                // The admin API opened the bundle with `password ?? ""` when it accepted it.
                self = .apnsCertificatePKCS12(base64: pkcs12, password: try field(.password) ?? "")
            } else if let certificate = try field(.certificatePem), let key = try field(.privateKeyPem) {
                self = .apnsCertificatePEM(certificateChainPEM: certificate, privateKeyPEM: key)
            } else {
                throw Incomplete(kind: kind)
            }
        case "fcm-service-account":
            guard let json = try field(.serviceAccount) else { throw Incomplete(kind: kind) }
            self = .fcmServiceAccount(json: json)
        default:
            throw Incomplete(kind: kind)
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encode(kind, forKey: .kind)
        switch self {
        case .apnsToken(let keyId, let teamId, let key):
            try container.encode(keyId, forKey: .keyId)
            try container.encode(teamId, forKey: .teamId)
            try container.encode(key, forKey: .privateKey)
        case .apnsCertificatePKCS12(let pkcs12, let password):
            try container.encode(pkcs12, forKey: .pkcs12)
            try container.encode(password, forKey: .password)
        case .apnsCertificatePEM(let certificate, let key):
            try container.encode(certificate, forKey: .certificatePem)
            try container.encode(key, forKey: .privateKeyPem)
        case .fcmServiceAccount(let json):
            try container.encode(json, forKey: .serviceAccount)
        }
    }
}
