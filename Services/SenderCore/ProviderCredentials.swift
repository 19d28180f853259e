import Foundation
import PushCredentials
import PushEvents
import PushWire
import Synchronization

/// An app's credentials as a transport sends with them: looked up in the cache, checked against
/// the suspensions, parsed once per fingerprint into the provider client's form. Both transports
/// use it, so a missing, refused or unusable credential is handled the same way for APNs and FCM.
final class ProviderCredentials<Parsed: Sendable>: Sendable {
    enum Lookup {
        case ready(Parsed, fingerprint: String)
        /// The send does not happen; this is its outcome.
        case stop(SendOutcome)
    }

    private let cache: AppCredentialCache
    private let suspensions: CredentialSuspensions
    private let now: @Sendable () -> Date
    private let parse: @Sendable (AppCredentialCache.Entry) throws -> Parsed
    private let parsed = Mutex<[String: Parsed]>([:])

    init(
        cache: AppCredentialCache, suspensions: CredentialSuspensions, now: @escaping @Sendable () -> Date,
        parse: @escaping @Sendable (AppCredentialCache.Entry) throws -> Parsed
    ) {
        self.cache = cache
        self.suspensions = suspensions
        self.now = now
        self.parse = parse
    }

    func lookup(appId: UUID) async -> Lookup {
        if let known = immediateLookup(appId: appId) { return known }
        do {
            return resolve(try await cache.credentials(appId: appId), appId: appId)
        } catch is CredentialCipherError {
            // Sealed under a key this sender does not hold (a rotation half deployed, or a lost
            // key): waiting may help once the key is configured; `pushctl credentials reseal`
            // names the key id.
            return .stop(.retry(reason: "credential-key-unknown"))
        } catch {
            return .stop(.retry(reason: "credential-store-unavailable"))
        }
    }

    /// Calls `ready` with the app's parsed credentials and their fingerprint, or `completion` with
    /// the outcome when the send does not happen: at once when the answer is known (nearly
    /// always), after reading the credential store in `waiting` (the sender's task group)
    /// otherwise. The transports' start.
    func withCredentials(
        appId: UUID, waiting: WaitingSends, completion: @escaping @Sendable (SendOutcome) -> Void,
        ready: @escaping @Sendable (Parsed, _ fingerprint: String) -> Void
    ) {
        let deliver: @Sendable (Lookup) -> Void = { lookup in
            switch lookup {
            case .stop(let outcome): completion(outcome)
            case .ready(let parsed, let fingerprint): ready(parsed, fingerprint)
            }
        }
        guard let known = immediateLookup(appId: appId) else {
            waiting.start { deliver(await self.lookup(appId: appId)) }
            return
        }
        deliver(known)
    }

    /// `lookup` when the answer is known without waiting (a suspended app, cached credentials);
    /// nil when the credential store must be read.
    func immediateLookup(appId: UUID) -> Lookup? {
        if !suspensions.isEmpty, let until = suspensions.suspendedUntil(Self.appKey(appId), now: now()) {
            return .stop(.deferred(reason: "credentials-suspended", until: until))
        }
        guard let cached = cache.cachedCredentials(appId: appId) else { return nil }
        return resolve(cached, appId: appId)
    }

    private static func appKey(_ appId: UUID) -> String { "app:\(appId.lowercaseText)" }

    /// The `MessageFailed` reason of a message whose app was deleted.
    static var appDeletedReason: String { "app-deleted" }

    /// Checks the app's credentials against the suspensions and parses them once. An app
    /// without credentials is a configuration error (the queue waits for an operator); a deleted
    /// app's message fails at once, soft, as `app-deleted`: nothing will ever send it.
    private func resolve(_ credentials: AppCredentialCache.Credentials, appId: UUID) -> Lookup {
        let entry: AppCredentialCache.Entry
        switch credentials {
        case .active(let active): entry = active
        case .missing: return .stop(.credentialRejected(reason: "NoCredentials", credential: Self.appKey(appId)))
        case .appDeleted: return .stop(.failed(reason: Self.appDeletedReason))
        }
        let fingerprint = entry.reference.fingerprint
        if !suspensions.isEmpty, let until = suspensions.suspendedUntil(fingerprint, now: now()) {
            return .stop(.deferred(reason: "credentials-suspended", until: until))
        }
        if let known = parsed.withLock({ $0[fingerprint] }) { return .ready(known, fingerprint: fingerprint) }
        do {
            let value = try parse(entry)
            parsed.withLock { $0[fingerprint] = value }
            return .ready(value, fingerprint: fingerprint)
        } catch {
            return .stop(.credentialRejected(reason: "UnusableCredentials", credential: fingerprint))
        }
    }

    struct Unusable: Error {}
}
