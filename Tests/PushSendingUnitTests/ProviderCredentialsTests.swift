import Foundation
import PushCredentials
import Testing

@testable import PushSending

@Suite("Sender credentials sealed under a key the sender does not hold")
struct ProviderCredentialsTests {
    static func randomKey() -> String {
        Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
    }

    @Test("the message is retried with reason credential-key-unknown, not credential-store-unavailable")
    func unknownKey() async throws {
        let appId = UUID()
        let sealed = try CredentialCipher(keyBase64: Self.randomKey()).seal(Data("{}".utf8), appId: appId)
        let senderCipher = try CredentialCipher(keyBase64: Self.randomKey())
        let cache = AppCredentialCache(lifetime: .seconds(30)) { appId in
            _ = try senderCipher.open(sealed.ciphertext, keyId: sealed.keyId, appId: appId)
            return .missing
        }
        let credentials = ProviderCredentials<String>(cache: cache, suspensions: CredentialSuspensions(), now: { Date() }, parse: { _ in "parsed" })
        guard case .stop(let outcome) = await credentials.lookup(appId: appId) else {
            Issue.record("a credential no configured key opens was used")
            return
        }
        #expect(outcome == .retry(reason: "credential-key-unknown"))
    }
}
