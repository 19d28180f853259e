import FCM
import Foundation
import PushCredentials
import PushEvents

/// Sends `FCMMessagePlanned` records through FCM HTTP v1 with the app's service account and maps
/// each answer to a `SendOutcome` (docs/senders.md has the table).
package struct FCMTransport: MessageTransport {
    package let provider = "fcm"
    let client: FCMClient
    let credentials: ProviderCredentials<FCMServiceAccount>
    let now: @Sendable () -> Date

    package init(client: FCMClient, credentials: AppCredentialCache, suspensions: CredentialSuspensions, now: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.credentials = ProviderCredentials(cache: credentials, suspensions: suspensions, now: now) { entry in
            guard case .fcmServiceAccount(let json) = entry.secret else { throw ProviderCredentials<FCMServiceAccount>.Unusable() }
            return try FCMServiceAccount(id: entry.reference.fingerprint, json: json)
        }
        self.now = now
    }

    /// Without a task when the app's credentials are cached (nearly always): the FCM client's
    /// callback `send` answers on the connection's event loop. The rare send that must wait (an
    /// access token, a paced project, a resend) continues with the client's async `send` in
    /// `waiting`.
    package func send(
        _ message: FCMMessagePlanned, waiting: WaitingSends, stillWanted: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SendOutcome) -> Void
    ) {
        credentials.withCredentials(appId: message.appId, waiting: waiting, completion: completion) { account, fingerprint in
            send(message, account: account, fingerprint: fingerprint, waiting: waiting, stillWanted: stillWanted, completion: completion)
        }
    }

    private func send(
        _ message: FCMMessagePlanned, account: FCMServiceAccount, fingerprint: String, waiting: WaitingSends,
        stillWanted: @escaping @Sendable () -> Bool, completion: @escaping @Sendable (SendOutcome) -> Void
    ) {
        // A project paused after QUOTA_EXCEEDED: the message waits on the retry topic instead of
        // inside the client, so it holds none of the instance's in-flight slots meanwhile and
        // other projects' messages keep going.
        if case .paused(let until) = client.throttle.status(project: message.projectId) {
            return completion(.deferred(reason: "QUOTA_EXCEEDED", until: until))
        }
        let remaining = max(0, Int(message.validUntil.timeIntervalSince(now()).rounded(.down)))
        let body = Self.withTTL(message.message, seconds: remaining)
        client.send(FCMRequest(projectId: message.projectId, message: body, stillWanted: stillWanted), account: account) { [client] result in
            switch result {
            case .answered(let response):
                completion(Self.outcome(of: response, credential: fingerprint))
            case .failed(let error):
                completion(Self.outcome(of: error, credential: fingerprint))
            case .needsAsync(let pending):
                waiting.start {
                    do throws(FCMClientError) {
                        completion(Self.outcome(of: try await client.send(continuing: pending), credential: fingerprint))
                    } catch {
                        completion(Self.outcome(of: error, credential: fingerprint))
                    }
                }
            }
        }
    }

    /// The sender's reading of a send that got no FCM answer.
    static func outcome(of error: FCMClientError, credential: String) -> SendOutcome {
        if error.code == .withdrawn { return .withdrawn }
        if error.isRetriable { return .retry(reason: "transport-\(error.code)") }
        if error.code == .tokenEndpointFailed { return .credentialRejected(reason: "TokenEndpointRefused", credential: credential) }
        return .failed(reason: "transport-\(error.code)")
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
            // The client has paused the project: this message waits for the pause, the
            // project's next ones are deferred (`send` above).
            return .retry(reason: "QUOTA_EXCEEDED", after: after, atLeast: FCMResponse.minimumQuotaDelay, quota: .project)
        case .deviceQuotaExceeded(let after):
            // Only this device's rate is spent: this message backs off, the rest go on.
            return .retry(reason: "QUOTA_EXCEEDED", after: after, quota: .device)
        case .retry(let reason, let after):
            return .retry(reason: reason, after: after)
        }
    }

    /// The planned `message` with `android.ttl` set to the time left: the planner wrote the time
    /// left at planning, and a message sent later (a retry, a backlog) must not outlive
    /// `validUntil`. The planner writes `"android":{` once (data values are strings, so the
    /// sequence cannot come from them) and `"ttl":"<n>s"` in it.
    ///
    /// It works on the UTF-8 bytes the request sends: Foundation's `range(of:)` and
    /// `replacingCharacters(in:with:)` went through NSString and UTF-16 and were 17 % of the
    /// fcm-sender's CPU.
    static func withTTL(_ message: String, seconds: Int) -> [UInt8] {
        var message = message
        return message.withUTF8 { bytes in
            guard let android = firstIndex(of: #""android":{"#, in: bytes, from: 0),
                let start = firstIndex(of: #""ttl":""#, in: bytes, from: android)
            else { return Array(bytes) }
            let valueStart = start + 7
            guard let end = bytes[valueStart...].firstIndex(of: UInt8(ascii: "\"")) else { return Array(bytes) }
            var body: [UInt8] = []
            body.reserveCapacity(bytes.count + 8)
            body.append(contentsOf: bytes[..<valueStart])
            body.append(contentsOf: "\(seconds)s".utf8)
            body.append(contentsOf: bytes[end...])
            return body
        }
    }

    /// Where `pattern` (ASCII) first starts in `bytes` at or after `from`.
    private static func firstIndex(of pattern: StaticString, in bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        let pattern = UnsafeBufferPointer(start: pattern.utf8Start, count: pattern.utf8CodeUnitCount)
        guard bytes.count >= pattern.count, from <= bytes.count - pattern.count else { return nil }
        var index = from
        while index <= bytes.count - pattern.count {
            if bytes[index] == pattern[0], UnsafeBufferPointer(rebasing: bytes[index..<(index + pattern.count)]).elementsEqual(pattern) {
                return index
            }
            index += 1
        }
        return nil
    }
}
