import Foundation

/// New provider credentials became the app's active ones (set or rotated): `push.catalog`,
/// key `app:<appId>`. Carries what identifies them, never the secret: the sealed secret is in
/// `push.app_credentials` under `credentialId`.
package struct AppCredentialsSet: PushEvent, Hashable {
    package static let eventType = "AppCredentialsSet"
    package static let eventVersion = 1

    package var appId: UUID
    package var credentialId: UUID
    /// `apns-token`, `apns-certificate` or `fcm-service-account`.
    package var kind: String
    /// `sha256:<hex>` of the secret material.
    package var fingerprint: String
    /// APNs token auth: key id and team id. FCM: project id and client e-mail. Certificate:
    /// subject and expiry.
    package var details: [String: String]

    package init(appId: UUID, credentialId: UUID, kind: String, fingerprint: String, details: [String: String]) {
        self.appId = appId
        self.credentialId = credentialId
        self.kind = kind
        self.fingerprint = fingerprint
        self.details = details
    }
}
