import Foundation

/// Which OAuth token endpoints an FCM service-account key file may name (`token_uri`).
///
/// The sender posts the account's signed assertion there, and the URL comes from a file an
/// operator uploaded: a cleartext or foreign URL would hand the assertion to whoever serves it
/// and make the sender call an address of the uploader's choosing. So only Google's endpoints
/// are accepted: `https`, the default port, no user info, host `oauth2.googleapis.com`, another
/// `*.googleapis.com`, or `accounts.google.com` (older key files). A proxy or a simulator is
/// reached through the sender's own setting (`FCM_TOKEN_URL`), not through the key file.
/// Checked when the file is uploaded (registration's admin API) and when the sender reads it.
package enum GoogleTokenEndpoint {
    package static func isAllowed(_ uri: String) -> Bool {
        guard let url = URL(string: uri), url.scheme == "https", let host = url.host?.lowercased(), url.port == nil || url.port == 443,
            url.user == nil, url.password == nil
        else { return false }
        return host == "accounts.google.com" || (host.hasSuffix(".googleapis.com") && host.count > ".googleapis.com".count)
    }
}
