import Foundation

/// A provider token as the sender processes of one deployment share it.
package struct APNSSharedProviderToken: Sendable, Equatable {
    package var teamId: String
    package var keyId: String
    /// SHA-256 of the signing key's public key (hex): a token is shared only between processes
    /// holding the same key material, even if two keys were given the same ids by mistake.
    package var keyFingerprint: String
    /// The compact JWT; a bearer secret for an hour: never logged.
    package var jwt: String
    /// The token's `iat`.
    package var issuedAt: Date

    package init(teamId: String, keyId: String, keyFingerprint: String, jwt: String, issuedAt: Date) {
        self.teamId = teamId
        self.keyId = keyId
        self.keyFingerprint = keyFingerprint
        self.jwt = jwt
        self.issuedAt = issuedAt
    }
}

/// Where the processes that send with one signing key agree on one provider token.
///
/// APNs counts new tokens per key, not per connection or process: a second process minting its
/// own token for the same key within 20 minutes of the first gets 429 TooManyProviderTokenUpdates.
/// With a store, every `APNSClient` of the deployment uses the token the store holds and the
/// first process due for a refresh replaces it for all. Without one (the default), the token is
/// shared within the process only.
package protocol APNSProviderTokenStore: Sendable {
    /// Atomically: stores `candidate` for its (team, key, fingerprint) when no token is stored or the stored
    /// one was issued before `replacingIssuedBefore`; returns the token stored afterwards (the
    /// candidate, or another process's newer token).
    func exchange(_ candidate: APNSSharedProviderToken, replacingIssuedBefore: Date) async throws -> APNSSharedProviderToken

    /// The token stored for (team, key, fingerprint), if any.
    func current(teamId: String, keyId: String, keyFingerprint: String) async throws -> APNSSharedProviderToken?
}
