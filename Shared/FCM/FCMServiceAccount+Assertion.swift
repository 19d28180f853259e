import Foundation
import PushWire
import _CryptoExtras

extension FCMServiceAccount {
    /// The OAuth scope FCM sends need.
    package static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    /// The signed JWT (RS256) the token endpoint exchanges for an access token: `iss` the client
    /// email, `scope` firebase.messaging, `aud` the key file's `token_uri`, valid one hour from `now`.
    package func assertion(now: Date) throws(FCMClientError) -> String {
        struct Header: Encodable {
            var alg = "RS256"
            var typ = "JWT"
            var kid: String?
        }
        struct Claims: Encodable {
            var iss: String
            var scope: String
            var aud: String
            var iat: Int
            var exp: Int
        }
        let issuedAt = Int(now.timeIntervalSince1970)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let header = Base64URL.encode(try encoder.encode(Header(kid: self.privateKeyId)))
            let claims = Base64URL.encode(
                try encoder.encode(
                    Claims(iss: self.clientEmail, scope: Self.messagingScope, aud: self.tokenURI, iat: issuedAt, exp: issuedAt + 3600)
                )
            )
            let signingInput = "\(header).\(claims)"
            let signature = try self.privateKey.signature(for: Data(signingInput.utf8), padding: .insecurePKCS1v1_5)
            return "\(signingInput).\(Base64URL.encode(signature.rawRepresentation))"
        } catch {
            throw FCMClientError(.invalidServiceAccount, "service account \(self.id): signing the assertion failed", isRetriable: false)
        }
    }
}
