/// One FCM HTTP v1 send: the project and the `message` object, already encoded.
package struct FCMRequest: Sendable {
    package var projectId: String
    /// The HTTP v1 `message` object as JSON bytes. The client sends `{"message":<bytes>}` without
    /// parsing or re-encoding them.
    package var message: [UInt8]

    package init(projectId: String, message: [UInt8]) {
        self.projectId = projectId
        self.message = message
    }
}
