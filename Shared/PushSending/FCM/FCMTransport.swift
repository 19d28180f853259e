import FCMClient
import Foundation
import PushEvents
import PushRegistration

/// Sends `FCMMessagePlanned` records through FCM HTTP v1 with the app's service account and maps
/// each answer to a `SendOutcome` (docs/senders.md has the table).
public struct FCMTransport: MessageTransport {
    public let provider = "fcm"
    let client: FCMClient
    let credentials: ProviderCredentials<FCMServiceAccount>
    let now: @Sendable () -> Date

    public init(client: FCMClient, credentials: AppCredentialCache, suspensions: CredentialSuspensions, now: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.credentials = ProviderCredentials(cache: credentials, suspensions: suspensions, now: now) { entry in
            guard entry.secret.kind == "fcm-service-account", let json = entry.secret.serviceAccount else { throw ProviderCredentials<FCMServiceAccount>.Unusable() }
            return try FCMServiceAccount(id: entry.reference.fingerprint, json: json)
        }
        self.now = now
    }

    public func send(_ message: FCMMessagePlanned) async -> SendOutcome {
        let account: FCMServiceAccount
        let fingerprint: String
        switch await credentials.lookup(appId: message.appId) {
        case .stop(let outcome): return outcome
        case .ready(let parsed, let key): (account, fingerprint) = (parsed, key)
        }
        // A project paused after QUOTA_EXCEEDED: the message waits on the retry topic instead of
        // inside the client, so it holds none of the instance's in-flight slots meanwhile and
        // other projects' messages keep going.
        if case .paused(let until) = client.throttle.status(project: message.projectId) {
            return .deferred(reason: "QUOTA_EXCEEDED", until: until)
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
