import Foundation

/// One provider's way of sending a planned message (APNs, FCM). It resolves the app's
/// credentials, talks HTTP/2 to the provider and classifies the answer; everything else (reading
/// the topics, retries, results, quarantine, offsets) is `MessageSender`'s.
package protocol MessageTransport: Sendable {
    associatedtype Message: OutgoingMessage

    /// `apns` or `fcm`: the `provider` label of the sender's metrics.
    var provider: String { get }

    /// Sends one message and calls `completion` once with what became of it, on whatever thread
    /// the answer arrives (usually the HTTP/2 connection's event loop): no task per message.
    /// A send that must wait (a token to obtain, a resend) continues in `waiting`, which the
    /// caller runs in its task group. Never fails: a transport failure is a `.retry` (or
    /// `.failed` when retrying cannot help). `stillWanted` is asked just before the request is
    /// written, after any wait for a stream: false withdraws it (`.withdrawn`, nothing sent).
    func send(_ message: Message, waiting: WaitingSends, stillWanted: @escaping @Sendable () -> Bool, completion: @escaping @Sendable (SendOutcome) -> Void)
}
