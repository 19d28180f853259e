/// Why `FCMClient.send` got no FCM answer. FCM's own error answers are not errors here: they come
/// back as an `FCMResponse`. Descriptions never hold keys, tokens or payloads.
public struct FCMClientError: Error, Sendable, CustomStringConvertible {
    /// An open set of error kinds, each with a short label fit for a metric dimension.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public var label: String

        /// TCP connection not established (refused, unreachable, DNS, connect timeout).
        public static let connectFailed = Code(label: "connect_failed")
        /// TLS handshake failed (certificate not trusted, protocol mismatch).
        public static let tlsFailed = Code(label: "tls_failed")
        /// The connection or stream closed before the answer was complete.
        public static let connectionClosed = Code(label: "connection_closed")
        /// No complete answer within `requestTimeout`.
        public static let timeout = Code(label: "timeout")
        /// The OAuth token endpoint refused the assertion (`invalid_grant`, ...) or answered badly.
        public static let tokenEndpointFailed = Code(label: "token_endpoint_failed")
        /// The service-account JSON key is missing a field or holds an unusable one.
        public static let invalidServiceAccount = Code(label: "invalid_service_account")
        /// The calling task was cancelled (while waiting for the project throttle or in flight).
        public static let cancelled = Code(label: "cancelled")
        /// `shutdown()` was called.
        public static let shutDown = Code(label: "shut_down")
        /// Any other transport failure.
        public static let transportFailed = Code(label: "transport_failed")
        /// The request is not a well-formed HTTP/2 request (a line break or NUL in the project
        /// id or a header value): never sent, and sending it again cannot help.
        public static let invalidRequest = Code(label: "invalid_request")

        public var description: String { self.label }
    }

    public var code: Code
    /// Safe detail: an endpoint's error name and description, a field name, an error type.
    public var detail: String
    /// Whether sending the same request again later can succeed.
    public var isRetriable: Bool
    /// Whether FCM may have accepted the message although no answer arrived (the request was
    /// written before the failure). A resend may then deliver it twice.
    public var mayHaveBeenDelivered: Bool

    public init(_ code: Code, _ detail: String, isRetriable: Bool? = nil, mayHaveBeenDelivered: Bool = false) {
        self.code = code
        self.detail = detail
        self.isRetriable = isRetriable ?? Self.retriableByDefault.contains(code)
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }

    private static let retriableByDefault: Set<Code> = [.connectFailed, .connectionClosed, .timeout, .transportFailed]

    public var description: String {
        "FCMClientError.\(self.code.label): \(self.detail)"
    }
}
