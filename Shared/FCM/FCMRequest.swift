/// One FCM HTTP v1 send: the project and the `message` object, already encoded.
public struct FCMRequest: Sendable {
    public var projectId: String
    /// The HTTP v1 `message` object as JSON bytes. The client sends `{"message":<bytes>}` without
    /// parsing or re-encoding them.
    public var message: [UInt8]

    public init(projectId: String, message: [UInt8]) {
        self.projectId = projectId
        self.message = message
    }
}
