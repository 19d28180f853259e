import Crypto
import Foundation
import NIOCore
import PushWire
import Synchronization
import _CryptoExtras

/// Answers Google's OAuth token endpoint (`POST /token`) and FCM v1 sends
/// (`POST /v1/projects/{project}/messages:send`) like Google does.
package final class FCMBehaviour: ProviderBehaviour {
    package struct Configuration: Sendable {
        package var serviceAccounts: [FCMServiceAccount] = []
        /// `expires_in` of issued access tokens, seconds (Google: 3600).
        package var accessTokenLifetime: Int = 3600

        package init(serviceAccounts: [FCMServiceAccount] = [], accessTokenLifetime: Int = 3600) {
            self.serviceAccounts = serviceAccounts
            self.accessTokenLifetime = accessTokenLifetime
        }
    }

    package static let tokenPath = "/token"
    package static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"
    package static let messagingScope = "https://www.googleapis.com/auth/firebase.messaging"

    package let providerName = "fcm"
    package let limitsStreamsUntilFirstSuccess = false
    package let goAwayDebugData = "server shutting down"
    private let configuration: Configuration
    private let accounts: [String: FCMServiceAccount]
    private let state: SimulatorState
    package let accessTokens = FCMAccessTokens()
    /// Per-project fixed one-minute windows: (window start in epoch minutes, requests counted).
    private let quotaWindows = Mutex<[String: (minute: Int, count: Int)]>([:])
    private let messageCounter = Atomic<Int>(0)

    package init(configuration: Configuration, state: SimulatorState) {
        self.configuration = configuration
        self.accounts = Dictionary(configuration.serviceAccounts.map { ($0.clientEmail, $0) }, uniquingKeysWith: { _, last in last })
        self.state = state
    }

    package func reset() {
        self.quotaWindows.withLock { $0.removeAll() }
    }

    package func respond(to request: SimulatorRequest, on connection: ConnectionState) -> SimulatorResponse {
        if request.path == Self.tokenPath {
            guard request.method == "POST" else { return FCMError.notFound(request.path) }
            return self.exchangeAssertion(request)
        }
        guard request.method == "POST", let project = Self.project(inSendPath: request.path) else {
            return FCMError.notFound(request.path)
        }
        return self.send(request, project: project)
    }

    // MARK: OAuth token endpoint

    private func exchangeAssertion(_ request: SimulatorRequest) -> SimulatorResponse {
        let form = FormEncoding.decode(String(buffer: request.body))
        guard form["grant_type"] == Self.grantType else {
            return Self.oauthError("unsupported_grant_type", "Invalid grant_type: \(form["grant_type"] ?? "")")
        }
        guard let assertion = form["assertion"], let jwt = CompactJWT(assertion) else {
            return Self.oauthError("invalid_request", "Invalid JWT: malformed assertion")
        }
        guard jwt.header["alg"] == "RS256" else {
            return Self.oauthError("invalid_grant", "Invalid JWT: unsupported algorithm \(jwt.header["alg"] ?? "none")")
        }
        guard let issuer = jwt.string("iss"), let account = self.accounts[issuer] else {
            return Self.oauthError("invalid_grant", "Invalid grant: account not found")
        }
        guard let signature = Optional(_RSA.Signing.RSASignature(rawRepresentation: jwt.signature)),
            account.publicKey.isValidSignature(signature, for: Data(jwt.signingInput.utf8), padding: .insecurePKCS1v1_5)
        else {
            return Self.oauthError("invalid_grant", "Invalid JWT Signature.")
        }
        guard jwt.string("aud") == account.tokenURI else {
            return Self.oauthError("invalid_grant", "Invalid JWT: Failed audience check. The expected value was \(account.tokenURI).")
        }
        let scopes = (jwt.string("scope") ?? "").split(separator: " ").map(String.init)
        guard scopes.contains(Self.messagingScope) else {
            return Self.oauthError("invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        }
        let now = Date().timeIntervalSince1970
        guard let issuedAt = jwt.number("iat"), let expiresAt = jwt.number("exp"),
            expiresAt > issuedAt, expiresAt - issuedAt <= 3600, expiresAt > now, issuedAt <= now + 300
        else {
            return Self.oauthError(
                "invalid_grant",
                "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe. Check your iat and exp values in the JWT claim."
            )
        }
        let lifetime = self.configuration.accessTokenLifetime
        let token = self.accessTokens.issue(for: account, lifetime: lifetime)
        return .json(
            status: 200,
            ["access_token": token, "expires_in": lifetime, "token_type": "Bearer"],
            headers: [("cache-control", "no-cache, no-store, max-age=0, must-revalidate")]
        )
    }

    private static func oauthError(_ error: String, _ description: String) -> SimulatorResponse {
        .json(status: 400, ["error": error, "error_description": description], reason: "oauth:\(error)")
    }

    // MARK: messages:send

    private func send(_ request: SimulatorRequest, project: String) -> SimulatorResponse {
        guard let authorization = request.header(HTTPHeaderName.authorization),
            authorization.count > 7, authorization.prefix(7).lowercased() == "bearer ",
            let grant = self.accessTokens.grant(for: String(authorization.dropFirst(7))),
            grant.projectID == project
        else {
            return FCMError.unauthenticated
        }
        if let retryAfter = self.consumeQuota(project: project) {
            return FCMError.projectQuota(project: project, message: "Quota exceeded for quota metric 'Messages' of project \(project).", retryAfter: retryAfter)
                .response
        }
        guard let body = JSON.object(request.body.readableBytesView) else {
            return FCMError(.invalidArgument, "Invalid JSON payload received.").response
        }
        guard let message = body["message"] as? [String: Any] else {
            return FCMError(.invalidArgument, "Request contains an invalid argument: message is required.").response
        }
        let target: FCMMessageValidator.Target
        switch FCMMessageValidator.validate(message) {
        case .failure(let error): return error.response
        case .success(let accepted): target = accepted
        }
        if case .token(let token) = target, let rule = FCMTokenPrefix(token: token) {
            return rule.error.response
        }
        if case .token(let token) = target, self.state.takeDeviceQuota(token: token) {
            return FCMError.deviceQuota.response
        }
        if let injected = self.injectedFailure(project: project) {
            return injected.response
        }
        if (body["validate_only"] as? NSNumber)?.boolValue == true {
            return .json(status: 200, ["name": "projects/\(project)/messages/fake_message_id"])
        }

        let sequence = self.messageCounter.wrappingAdd(1, ordering: .relaxed).newValue
        let now = APNsBehaviour.nowMilliseconds()
        let name = "projects/\(project)/messages/0:\(now)%\(String(sequence, radix: 16))"
        let android = message["android"] as? [String: Any]
        let data = message["data"] as? [String: Any] ?? android?["data"] as? [String: Any]
        var token: String?
        var otherTarget: String?
        switch target {
        case .token(let value): token = value
        case .topic(let value): otherTarget = "topic:\(value)"
        case .condition(let value): otherTarget = "condition:\(value)"
        }
        self.state.append(
            LoggedNotification(
                provider: "fcm",
                token: token,
                target: otherTarget,
                id: name,
                mId: data?["_mId"] as? String,
                dId: data?["_dId"] as? String,
                priority: android?["priority"] as? String,
                collapseId: android?["collapse_key"] as? String,
                project: project,
                payloadBytes: request.body.readableBytes,
                receivedAtMs: request.receivedAtMs
            )
        )
        return .json(status: 200, ["name": name])
    }

    /// Counts one request against the project's quota; the seconds until the window ends when
    /// the quota is spent.
    private func consumeQuota(project: String) -> Int? {
        guard let quota = self.state.faults.quotaPerMinute else { return nil }
        let now = Date().timeIntervalSince1970
        let minute = Int(now / 60)
        return self.quotaWindows.withLock { windows in
            var window = windows[project] ?? (minute, 0)
            if window.minute != minute { window = (minute, 0) }
            guard window.count < quota else {
                return max(1, Int((Double(minute + 1) * 60 - now).rounded(.up)))
            }
            window.count += 1
            windows[project] = window
            return nil
        }
    }

    private func injectedFailure(project: String) -> FCMError? {
        if self.state.takeBurst429() {
            return FCMError.projectQuota(project: project, message: "Quota exceeded (injected burst).", retryAfter: 60)
        }
        let faults = self.state.faults
        guard faults.failPercent > 0, Double.random(in: 0..<100) < faults.failPercent else { return nil }
        let code = FCMError.Code.forFault(status: faults.failStatus, errorCode: faults.failReason)
        if code == .quotaExceeded { return FCMError.projectQuota(project: project, message: "Injected failure.", retryAfter: 60) }
        return FCMError(code, "Injected failure.", retryAfter: code == .unavailable ? 10 : nil)
    }

    /// `{project}` of `/v1/projects/{project}/messages:send`.
    static func project(inSendPath path: String) -> String? {
        let prefix = "/v1/projects/"
        let suffix = "/messages:send"
        guard path.hasPrefix(prefix), path.hasSuffix(suffix), path.count > prefix.count + suffix.count else { return nil }
        let project = path.dropFirst(prefix.count).dropLast(suffix.count)
        return project.contains("/") ? nil : String(project)
    }
}
