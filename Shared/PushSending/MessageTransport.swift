import Foundation

/// One provider's way of sending a planned message (APNs, FCM). It resolves the app's
/// credentials, talks HTTP/2 to the provider and classifies the answer; everything else (reading
/// the topics, retries, results, quarantine, offsets) is `MessageSender`'s.
public protocol MessageTransport: Sendable {
    associatedtype Message: OutgoingMessage

    /// `apns` or `fcm`: the `provider` label of the sender's metrics.
    var provider: String { get }

    /// Sends one message and says what became of it. Never throws: a transport failure is a
    /// `.retry` (or `.failed` when retrying cannot help).
    func send(_ message: Message) async -> SendOutcome

    /// `send` without a task of the caller's: `completion` is called once with the outcome, on
    /// whatever thread the answer arrives. The default runs `send` in a task; a transport whose
    /// client can answer through a callback does without (`APNSTransport`).
    func send(_ message: Message, completion: @escaping @Sendable (SendOutcome) -> Void)
}

extension MessageTransport {
    public func send(_ message: Message, completion: @escaping @Sendable (SendOutcome) -> Void) {
        Task { completion(await self.send(message)) }
    }
}
