import Foundation
import NIOCore
import PushWire
import X509

/// Answers `POST /3/device/<token>` like APNs: header, token, auth (client certificate or
/// provider token) and payload checks with APNs's reasons, then token-prefix and control-API
/// faults, then 200 with `apns-id`.
package struct APNsBehaviour: ProviderBehaviour {
    package struct Configuration: Sendable {
        /// Bundle ids (without push-type suffix) `apns-topic` may name; empty allows any topic.
        package var allowedTopics: Set<String> = []
        /// Registered provider-token keys; empty disables token auth (no `authorization` needed,
        /// `apns-topic` optional, full stream limit from the first SETTINGS).
        package var signingKeys: [APNsProviderTokenVerifier.SigningKey] = []
        /// PEM CA certificates that client certificates must chain to. Non-empty turns on
        /// certificate auth: TLS asks for a client certificate (optional, so token-auth clients
        /// share the port); a trusted one authorises its topic (`APNsCertificateTopics`) with no
        /// `authorization` header, any other presented certificate gets 403 `BadCertificate`.
        package var clientCertificateCAs: [String] = []

        package init(
            allowedTopics: Set<String> = [],
            signingKeys: [APNsProviderTokenVerifier.SigningKey] = [],
            clientCertificateCAs: [String] = []
        ) {
            self.allowedTopics = allowedTopics
            self.signingKeys = signingKeys
            self.clientCertificateCAs = clientCertificateCAs
        }
    }

    package static let payloadLimit = 4096
    package static let voipPayloadLimit = 5120
    package static let pushTypes: Set<String> = [
        "alert", "background", "voip", "complication", "fileprovider", "mdm", "liveactivity", "location",
        "pushtotalk", "widgets", "controls",
    ]
    /// The topic suffix a push type requires (simplified from Apple's table).
    package static let topicSuffixes: [String: String] = [
        "voip": ".voip",
        "complication": ".complication",
        "fileprovider": ".pushkit.fileprovider",
        "liveactivity": ".push-type.liveactivity",
        "pushtotalk": ".voip-ptt",
        "location": ".location-query",
    ]

    private static let devicePath = "/3/device/"
    private static let checkedForDuplicates: Set<String> = [
        HTTPHeaderName.authorization, HTTPHeaderName.apnsTopic, HTTPHeaderName.apnsPushType, HTTPHeaderName.apnsPriority,
        HTTPHeaderName.apnsExpiration, HTTPHeaderName.apnsCollapseID, HTTPHeaderName.apnsID, HTTPHeaderName.contentType,
        HTTPHeaderName.contentLength,
    ]

    package let providerName = "apns"
    package let goAwayDebugData = #"{"reason":"Shutdown"}"#
    package let configuration: Configuration
    package let verifier: APNsProviderTokenVerifier
    package let clientCertificates: ClientCertificateVerifier?
    private let state: SimulatorState

    package var limitsStreamsUntilFirstSuccess: Bool { self.verifier.isEnabled }

    /// Throws when `clientCertificateCAs` holds no readable PEM certificate.
    package init(configuration: Configuration, state: SimulatorState) throws {
        self.configuration = configuration
        self.verifier = APNsProviderTokenVerifier(keys: configuration.signingKeys)
        self.clientCertificates =
            configuration.clientCertificateCAs.isEmpty
            ? nil
            : try ClientCertificateVerifier(trustedCAsPEM: configuration.clientCertificateCAs, names: APNsCertificateTopics.topics(of:))
        self.state = state
    }

    package func reset() {
        self.verifier.reset()
    }

    package func respond(to request: SimulatorRequest, on connection: ConnectionState) -> SimulatorResponse {
        guard request.path.hasPrefix(Self.devicePath) else { return Self.error(404, "BadPath") }
        guard request.method == "POST" else { return Self.error(405, "MethodNotAllowed") }
        let token = String(request.path.dropFirst(Self.devicePath.count))
        if Self.hasDuplicateHeaders(request) { return Self.error(400, "DuplicateHeaders") }

        // Certificate auth first: a connection that presented a client certificate is judged by
        // it alone (APNs needs no `authorization` header then).
        var certificateTopics: [String]?
        switch connection.clientCertificate {
        case .trusted(let topics):
            certificateTopics = topics
        case .rejected:
            return Self.error(403, "BadCertificate")
        case nil:
            break
        }
        if certificateTopics == nil, self.verifier.isEnabled {
            switch self.verifier.verify(authorization: request.header(HTTPHeaderName.authorization)) {
            case .failure(let rejection):
                return Self.error(rejection.status, rejection.rawValue)
            case .success(let identity):
                if let bound = connection.boundProviderKey, bound != identity.key {
                    return Self.error(403, "UnrelatedKeyIdInToken")
                }
                connection.boundProviderKey = identity.key
            }
        }

        if token.isEmpty { return Self.error(400, "MissingDeviceToken") }
        let prefixRule = APNsTokenPrefix(token: token)
        if prefixRule == nil, !Self.isHexDeviceToken(token) { return Self.error(400, "BadDeviceToken") }

        let pushType = request.header(HTTPHeaderName.apnsPushType)
        if let pushType, !Self.pushTypes.contains(pushType) { return Self.error(400, "InvalidPushType") }
        var topic = request.header(HTTPHeaderName.apnsTopic)
        if let topic {
            let allowed = certificateTopics.map(Set.init) ?? self.configuration.allowedTopics
            if let reason = Self.topicProblem(topic, pushType: pushType, allowed: allowed) { return Self.error(400, reason) }
        } else if let certificateTopics {
            // Apple: without the header, a single-topic certificate's topic is the default.
            guard certificateTopics.count == 1 else { return Self.error(400, "MissingTopic") }
            topic = certificateTopics[0]
        } else if self.verifier.isEnabled {
            return Self.error(400, "MissingTopic")
        }
        let priority = request.header(HTTPHeaderName.apnsPriority)
        if let priority, !["1", "5", "10"].contains(priority) { return Self.error(400, "BadPriority") }
        if let expiration = request.header(HTTPHeaderName.apnsExpiration), Int64(expiration).map({ $0 < 0 }) ?? true {
            return Self.error(400, "BadExpirationDate")
        }
        let collapseID = request.header(HTTPHeaderName.apnsCollapseID)
        if let collapseID, collapseID.utf8.count > 64 { return Self.error(400, "BadCollapseId") }
        let requestedID = request.header(HTTPHeaderName.apnsID)
        if let requestedID, !Self.isLowercaseUUID(requestedID) { return Self.error(400, "BadMessageId") }

        let size = request.body.readableBytes
        if size == 0 { return Self.error(400, "PayloadEmpty") }
        let limit = pushType == "voip" ? Self.voipPayloadLimit : Self.payloadLimit
        if size > limit { return Self.error(413, "PayloadTooLarge") }
        guard let payload = JSON.object(request.body.readableBytesView), let aps = payload["aps"] as? [String: Any] else {
            return Self.error(400, "BadPayload")
        }
        let contentAvailableOnly = Self.isContentAvailableOnly(aps)
        if pushType == "background", !contentAvailableOnly { return Self.error(400, "InvalidPushType") }
        if priority == "10", contentAvailableOnly { return Self.error(400, "BadPriority") }

        if let prefixRule {
            return Self.error(prefixRule.status, prefixRule.reason)
        }
        if let injected = self.injectedFailure() {
            return injected
        }

        let apnsID = requestedID ?? UUID().uuidString.lowercased()
        self.state.append(
            LoggedNotification(
                provider: "apns",
                token: token,
                id: apnsID,
                mId: Self.messageID(payload["_mId"]),
                dId: Self.messageID(payload["_dId"]),
                topic: topic,
                pushType: pushType ?? (contentAvailableOnly ? "background" : "alert"),
                priority: priority,
                collapseId: collapseID,
                payloadBytes: size,
                receivedAtMs: request.receivedAtMs
            )
        )
        return SimulatorResponse(status: 200, headers: [(HTTPHeaderName.apnsID, apnsID)])
    }

    /// An APNs error answer: `{"reason": ...}`, plus `timestamp` (ms) on 410.
    package static func error(_ status: Int, _ reason: String) -> SimulatorResponse {
        var body: [String: Any] = ["reason": reason]
        if status == 410 {
            body["timestamp"] = Self.nowMilliseconds()
        }
        return .json(status: status, body, reason: reason)
    }

    private func injectedFailure() -> SimulatorResponse? {
        let state = self.state
        if state.takeBurst429() {
            return Self.error(429, "TooManyRequests")
        }
        let faults = state.faults
        guard faults.failPercent > 0, Double.random(in: 0..<100) < faults.failPercent else { return nil }
        return Self.error(faults.failStatus, faults.failReason ?? Self.defaultReason(status: faults.failStatus))
    }

    private static func defaultReason(status: Int) -> String {
        switch status {
        case 400: "BadDeviceToken"
        case 403: "Forbidden"
        case 410: "Unregistered"
        case 413: "PayloadTooLarge"
        case 429: "TooManyRequests"
        case 503: "ServiceUnavailable"
        default: "InternalServerError"
        }
    }

    /// BadTopic for a malformed topic or a missing push-type suffix; TopicDisallowed ("pushing to
    /// this topic is not allowed") when the topic minus the suffix is not in `allowed` (empty
    /// allows any).
    private static func topicProblem(_ topic: String, pushType: String?, allowed: Set<String>) -> String? {
        guard !topic.isEmpty, !topic.contains(where: { $0.isWhitespace || $0 == "/" }) else { return "BadTopic" }
        var base = topic
        if let pushType, let suffix = Self.topicSuffixes[pushType] {
            guard topic.hasSuffix(suffix) else { return "BadTopic" }
            base = String(topic.dropLast(suffix.count))
        }
        if !allowed.isEmpty, !allowed.contains(base) {
            return "TopicDisallowed"
        }
        return nil
    }

    private static func hasDuplicateHeaders(_ request: SimulatorRequest) -> Bool {
        var seen: Set<String> = []
        for (name, _, _) in request.headers where Self.checkedForDuplicates.contains(name) {
            if !seen.insert(name).inserted { return true }
        }
        return false
    }

    /// 64 to 200 hex digits, even count (APNs tokens are 32 bytes today; longer ones are allowed).
    static func isHexDeviceToken(_ token: String) -> Bool {
        let bytes = token.utf8
        guard (64...200).contains(bytes.count), bytes.count % 2 == 0 else { return false }
        return bytes.allSatisfy { (48...57).contains($0) || (97...102).contains($0) || (65...70).contains($0) }
    }

    /// `xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx` in lowercase hex.
    static func isLowercaseUUID(_ value: String) -> Bool {
        let bytes = Array(value.utf8)
        guard bytes.count == 36 else { return false }
        for (index, byte) in bytes.enumerated() {
            if [8, 13, 18, 23].contains(index) {
                guard byte == UInt8(ascii: "-") else { return false }
            } else {
                guard (48...57).contains(byte) || (97...102).contains(byte) else { return false }
            }
        }
        return true
    }

    /// `aps` has `content-available: 1` and nothing that shows or sounds.
    static func isContentAvailableOnly(_ aps: [String: Any]) -> Bool {
        guard (aps["content-available"] as? NSNumber)?.intValue == 1 else { return false }
        return aps["alert"] == nil && aps["badge"] == nil && aps["sound"] == nil
    }

    static func messageID(_ value: Any?) -> String? {
        switch value {
        case let string as String: string
        case let number as NSNumber: number.stringValue
        default: nil
        }
    }

    package static func nowMilliseconds() -> Int64 {
        Int64(Date().timeIntervalSince1970 * 1000)
    }
}
