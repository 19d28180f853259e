/// One FCM HTTP v1 send: the project and the `message` object, already encoded.
package struct FCMRequest: Sendable {
    package var projectId: String
    /// The HTTP v1 `message` object as JSON bytes. The client sends `{"message":<bytes>}` without
    /// parsing or re-encoding them.
    package var message: [UInt8]
    /// Asked just before the request is written (after any wait for a stream); false withdraws
    /// it: the send fails `.withdrawn` without reaching FCM. Nil: always sent.
    package var stillWanted: (@Sendable () -> Bool)?

    package init(projectId: String, message: [UInt8], stillWanted: (@Sendable () -> Bool)? = nil) {
        self.projectId = projectId
        self.message = message
        self.stillWanted = stillWanted
    }
}
