import APNS
import Foundation
import Logging
import NIOCore
import PushCredentials
import PushEvents

/// Sends `APNSMessagePlanned` records to APNs with the app's active credentials and maps each
/// answer to a `SendOutcome` (docs/senders.md has the table).
package struct APNSTransport: MessageTransport {
    package let provider = "apns"
    let client: APNSClient
    let credentials: ProviderCredentials<APNSCredentials>

    package init(client: APNSClient, credentials: AppCredentialCache, suspensions: CredentialSuspensions, now: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.credentials = ProviderCredentials(cache: credentials, suspensions: suspensions, now: now, parse: Self.credentials(for:))
    }

    /// Without a task when the app's credentials are cached (nearly always): the APNs client's
    /// callback `send` answers on the connection's event loop. The rare send that must wait (a
    /// provider token, a resend) continues with the client's async `send` in `waiting`.
    package func send(
        _ message: APNSMessagePlanned, waiting: WaitingSends, stillWanted: @escaping @Sendable () -> Bool,
        completion: @escaping @Sendable (SendOutcome) -> Void
    ) {
        credentials.withCredentials(appId: message.appId, waiting: waiting, completion: completion) { apnsCredentials, fingerprint in
            send(message, credentials: apnsCredentials, fingerprint: fingerprint, waiting: waiting, stillWanted: stillWanted, completion: completion)
        }
    }

    private func send(
        _ message: APNSMessagePlanned, credentials apnsCredentials: APNSCredentials, fingerprint: String,
        waiting: WaitingSends, stillWanted: @escaping @Sendable () -> Bool, completion: @escaping @Sendable (SendOutcome) -> Void
    ) {
        guard let environment = APNSEnvironment(rawValue: message.environment) else {
            return completion(.failed(reason: "BadEnvironment"))
        }
        let request = APNSRequest(
            deviceToken: message.registrationToken, topic: message.topic, pushType: message.pushType, priority: message.priority,
            expiration: message.validUntil, collapseId: message.collapseId, apnsId: message.messageId, payload: ByteBuffer(string: message.payload),
            stillWanted: stillWanted
        )
        client.send(request, credentials: apnsCredentials, environment: environment) { [client] result in
            switch result {
            case .answered(let response):
                completion(Self.outcome(of: response, credential: fingerprint))
            case .failed(let error):
                completion(Self.outcome(of: error, credential: fingerprint))
            case .needsAsync(let pending):
                waiting.start {
                    do throws(APNSClientError) {
                        completion(Self.outcome(of: try await client.send(continuing: pending), credential: fingerprint))
                    } catch {
                        completion(Self.outcome(of: error, credential: fingerprint))
                    }
                }
            }
        }
    }

    /// The sender's reading of a send that got no APNs answer.
    static func outcome(of error: APNSClientError, credential: String) -> SendOutcome {
        if error.code == .withdrawn { return .withdrawn }
        if error.isRetriable { return .retry(reason: "transport-\(error.code)") }
        if error.code == .badCredentials { return .credentialRejected(reason: "UnusableCredentials", credential: credential) }
        return .failed(reason: "transport-\(error.code)")
    }

    /// The sender's reading of an APNs answer (the reference's table).
    static func outcome(of response: APNSResponse, credential: String) -> SendOutcome {
        switch response.outcome {
        case .sent(let apnsId):
            return .sent(providerMessageId: apnsId)
        case .tokenInvalid(let reason, let invalidSince):
            return .tokenInvalid(reason: reason.rawValue, invalidSince: invalidSince)
        case .rejected(let reason):
            return .failed(reason: reason.rawValue)
        case .credentialRejected(let reason):
            return .credentialRejected(reason: reason.rawValue, credential: credential)
        case .retry(let reason, let after):
            // APNs's only quota is per device token (429 TooManyRequests: "too many requests
            // for the same device token"); its message backs off alone, the others go on.
            let quota: SendOutcome.QuotaScope? = response.status == 429 ? .device : nil
            return .retry(reason: reason?.rawValue ?? "http-\(response.status)", after: after, quota: quota)
        }
    }

    /// A .p8 key, a .p12 or a PEM pair, as the APNs client takes it (parsed once per fingerprint).
    @Sendable static func credentials(for entry: AppCredentialCache.Entry) throws -> APNSCredentials {
        let fingerprint = entry.reference.fingerprint
        switch entry.secret {
        case .apnsToken(let keyId, let teamId, let key):
            return try .token(id: fingerprint, teamId: teamId, keyId: keyId, privateKeyPEM: key)
        case .apnsCertificatePKCS12(let pkcs12, let password):
            return try .pkcs12(id: fingerprint, base64: pkcs12, password: password)
        case .apnsCertificatePEM(let certificate, let key):
            return try .certificate(id: fingerprint, certificateChainPEM: certificate, privateKeyPEM: key)
        case .fcmServiceAccount:
            throw ProviderCredentials<APNSCredentials>.Unusable()
        }
    }
}
