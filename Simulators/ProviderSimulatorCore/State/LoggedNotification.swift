/// One notification a simulator accepted, as the control API's log query returns it.
/// Fields a provider does not have stay nil and are left out of the JSON.
package struct LoggedNotification: Sendable, Codable, Equatable {
    /// Monotonic sequence number within this simulator (survives `reset` as a counter only).
    package var sequence: Int
    package var provider: String
    /// Device token (APNs path token; FCM `message.token`).
    package var token: String?
    /// FCM `message.topic` or `message.condition` when the message had no token.
    package var target: String?
    /// APNs `apns-id` / FCM message `name`.
    package var id: String
    /// The project's message id: top-level `_mId` (APNs payload) or `data._mId` (FCM).
    package var mId: String?
    /// The delivery id: top-level `_dId` (APNs payload) or `data._dId` (FCM).
    package var dId: String?
    /// APNs `apns-topic`.
    package var topic: String?
    /// APNs `apns-push-type`.
    package var pushType: String?
    /// APNs `apns-priority` / FCM `android.priority`.
    package var priority: String?
    /// APNs `apns-collapse-id` / FCM `android.collapse_key`.
    package var collapseId: String?
    /// FCM project id.
    package var project: String?
    /// Payload size in bytes.
    package var payloadBytes: Int
    /// Milliseconds since the epoch when the request was accepted.
    package var receivedAtMs: Int64

    package init(
        provider: String, token: String?, target: String? = nil, id: String, mId: String?, dId: String? = nil,
        topic: String? = nil, pushType: String? = nil, priority: String? = nil, collapseId: String? = nil,
        project: String? = nil, payloadBytes: Int, receivedAtMs: Int64
    ) {
        self.sequence = 0
        self.provider = provider
        self.token = token
        self.target = target
        self.id = id
        self.mId = mId
        self.dId = dId
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.collapseId = collapseId
        self.project = project
        self.payloadBytes = payloadBytes
        self.receivedAtMs = receivedAtMs
    }
}
