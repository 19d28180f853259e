import APNSClient
import Foundation
import Logging
import PushEvents
import PushRegistration
import Synchronization

/// Sends `APNSMessagePlanned` records to APNs with the app's active credentials and maps each
/// answer to a `SendOutcome` (docs/senders.md has the table).
public struct APNSTransport: MessageTransport {
    public let provider = "apns"
    let client: APNSClient
    let credentials: AppCredentialCache
    let suspensions: CredentialSuspensions
    let cooldown: TimeInterval
    let now: @Sendable () -> Date
    private let parsed = ParsedCredentials()

    public init(client: APNSClient, credentials: AppCredentialCache, suspensions: CredentialSuspensions, settings: SenderSettings, now: @escaping @Sendable () -> Date = Date.init) {
        self.client = client
        self.credentials = credentials
        self.suspensions = suspensions
        self.cooldown = Double(settings.credentialCooldownMilliseconds) / 1000
        self.now = now
    }

    public func send(_ message: APNSMessagePlanned) async -> SendOutcome {
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
        let apnsCredentials: APNSCredentials
        do {
            apnsCredentials = try parsed.credentials(for: entry)
        } catch {
            return .credentialRejected(reason: "UnusableCredentials", credential: fingerprint)
        }
        guard let environment = APNSEnvironment(rawValue: message.environment) else {
            return .failed(reason: "BadEnvironment")
        }
        let request = APNSRequest(
            deviceToken: message.registrationToken, topic: message.topic, pushType: message.pushType, priority: message.priority,
            expiration: message.validUntil, collapseId: message.collapseId, apnsId: message.messageId, payload: Array(message.payload.utf8)
        )
        do {
            let response = try await client.send(request, credentials: apnsCredentials, environment: environment)
            return Self.outcome(of: response, credential: fingerprint)
        } catch {
            if error.isRetriable { return .retry(reason: "transport-\(error.code)") }
            if error.code == .badCredentials { return .credentialRejected(reason: "UnusableCredentials", credential: fingerprint) }
            return .failed(reason: "transport-\(error.code)")
        }
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
            return .retry(reason: reason?.rawValue ?? "http-\(response.status)", after: after)
        }
    }
}

/// Parsed keys and certificates by fingerprint: a .p8 key or a .p12 is parsed once, not per message.
private final class ParsedCredentials: Sendable {
    private let byFingerprint = Mutex<[String: APNSCredentials]>([:])

    func credentials(for entry: AppCredentialCache.Entry) throws -> APNSCredentials {
        let fingerprint = entry.reference.fingerprint
        if let known = byFingerprint.withLock({ $0[fingerprint] }) { return known }
        let secret = entry.secret
        let credentials: APNSCredentials
        switch secret.kind {
        case "apns-token":
            guard let teamId = secret.teamId, let keyId = secret.keyId, let key = secret.privateKey else { throw UnusableCredentials() }
            credentials = try .token(id: fingerprint, teamId: teamId, keyId: keyId, privateKeyPEM: key)
        case "apns-certificate":
            if let pkcs12 = secret.pkcs12 {
                credentials = try .pkcs12(id: fingerprint, base64: pkcs12, password: secret.password)
            } else if let certificate = secret.certificatePem, let key = secret.privateKeyPem {
                credentials = try .certificate(id: fingerprint, certificateChainPEM: certificate, privateKeyPEM: key)
            } else {
                throw UnusableCredentials()
            }
        default:
            throw UnusableCredentials()
        }
        byFingerprint.withLock { $0[fingerprint] = credentials }
        return credentials
    }

    struct UnusableCredentials: Error {}
}
