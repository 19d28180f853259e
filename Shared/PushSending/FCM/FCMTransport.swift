import FCMClient
import Foundation
import PushEvents
import PushRegistration
import Synchronization

/// Sends `FCMMessagePlanned` records through FCM HTTP v1 with the app's service account and maps
/// each answer to a `SendOutcome` (docs/senders.md has the table).
public struct FCMTransport: MessageTransport {
    public let provider = "fcm"
    let client: FCMClient
    let credentials: AppCredentialCache
    let suspensions: CredentialSuspensions
    let now: @Sendable () -> Date
    private let accounts = ParsedAccounts()

    public init(client: FCMClient, credentials: AppCredentialCache, suspensions: CredentialSuspensions, now: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.credentials = credentials
        self.suspensions = suspensions
        self.now = now
    }

    public func send(_ message: FCMMessagePlanned) async -> SendOutcome {
        let appKey = "app:\(message.appId.uuidString.lowercased())"
        if let until = suspensions.suspendedUntil(appKey, now: now()) {
            return .deferred(reason: "credentials-suspended", until: until)
        }
        let entry: AppCredentialCache.Entry?
        do {
            entry = try await credentials.credentials(appId: message.appId)
        } catch {
            return .retry(reason: "credential-store-unavailable")
        }
        guard let entry else { return .credentialRejected(reason: "NoCredentials", credential: appKey) }
        let fingerprint = entry.reference.fingerprint
        if let until = suspensions.suspendedUntil(fingerprint, now: now()) {
            return .deferred(reason: "credentials-suspended", until: until)
        }
        let account: FCMServiceAccount
        do {
            account = try accounts.account(for: entry)
        } catch {
            return .credentialRejected(reason: "UnusableCredentials", credential: fingerprint)
        }
        let remaining = max(0, Int(message.validUntil.timeIntervalSince(now()).rounded(.down)))
        let body = Self.withTTL(message.message, seconds: remaining)
        do {
            let response = try await client.send(FCMRequest(projectId: message.projectId, message: Array(body.utf8)), account: account)
            return Self.outcome(of: response, credential: fingerprint)
        } catch {
            if error.isRetriable { return .retry(reason: "transport-\(error.code)") }
            if error.code == .tokenEndpointFailed { return .credentialRejected(reason: "TokenEndpointRefused", credential: fingerprint) }
            return .failed(reason: "transport-\(error.code)")
        }
    }

    /// The sender's reading of an FCM answer.
    static func outcome(of response: FCMResponse, credential: String) -> SendOutcome {
        switch response.outcome {
        case .sent(let name):
            return .sent(providerMessageId: name)
        case .tokenInvalid(let reason):
            return .tokenInvalid(reason: reason, invalidSince: nil)
        case .rejected(let reason):
            return .failed(reason: reason)
        case .credentialRejected(let reason):
            return .credentialRejected(reason: reason, credential: credential)
        case .quotaExceeded(let after):
            return .retry(reason: "QUOTA_EXCEEDED", after: after, atLeast: .seconds(60))
        case .retry(let reason, let after):
            return .retry(reason: reason, after: after)
        }
    }

    /// The planned `message` with `android.ttl` set to the time left: the planner wrote the time
    /// left at planning, and a message sent later (a retry, a backlog) must not outlive
    /// `validUntil`. The planner writes `"android":{` once (data values are strings, so the
    /// sequence cannot come from them) and `"ttl":"<n>s"` in it.
    static func withTTL(_ message: String, seconds: Int) -> String {
        guard let android = message.range(of: #""android":{"#),
              let start = message.range(of: #""ttl":""#, range: android.upperBound..<message.endIndex)
        else { return message }
        guard let end = message[start.upperBound...].firstIndex(of: "\"") else { return message }
        return message.replacingCharacters(in: start.upperBound..<end, with: "\(seconds)s")
    }
}

/// Parsed service accounts by fingerprint: the key is parsed once, not per message.
private final class ParsedAccounts: Sendable {
    private let byFingerprint = Mutex<[String: FCMServiceAccount]>([:])

    func account(for entry: AppCredentialCache.Entry) throws -> FCMServiceAccount {
        let fingerprint = entry.reference.fingerprint
        if let known = byFingerprint.withLock({ $0[fingerprint] }) { return known }
        guard entry.secret.kind == "fcm-service-account", let json = entry.secret.serviceAccount else { throw UnusableCredentials() }
        let account = try FCMServiceAccount(id: fingerprint, json: json)
        byFingerprint.withLock { $0[fingerprint] = account }
        return account
    }

    struct UnusableCredentials: Error {}
}
