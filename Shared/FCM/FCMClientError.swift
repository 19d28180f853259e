/// Why `FCMClient.send` got no FCM answer. FCM's own error answers are not errors here: they come
/// back as an `FCMResponse`. Descriptions never hold keys, tokens or payloads.
package struct FCMClientError: Error, Sendable, CustomStringConvertible {
    /// An open set of error kinds, each with a short label fit for a metric dimension.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        package var label: String

        /// TCP connection not established (refused, unreachable, DNS, connect timeout).
        package static let connectFailed = Code(label: "connect_failed")
        /// TLS handshake failed (certificate not trusted, protocol mismatch).
        package static let tlsFailed = Code(label: "tls_failed")
        /// The connection or stream closed before the answer was complete.
        package static let connectionClosed = Code(label: "connection_closed")
        /// No complete answer within `requestTimeout`.
        package static let timeout = Code(label: "timeout")
        /// The OAuth token endpoint refused the assertion (`invalid_grant`, ...) or answered badly.
        package static let tokenEndpointFailed = Code(label: "token_endpoint_failed")
        /// The service-account JSON key is missing a field or holds an unusable one.
        package static let invalidServiceAccount = Code(label: "invalid_service_account")
        /// The calling task was cancelled (while waiting for the project throttle or in flight).
        package static let cancelled = Code(label: "cancelled")
        /// `shutdown()` was called.
        package static let shutDown = Code(label: "shut_down")
        /// Any other transport failure.
        package static let transportFailed = Code(label: "transport_failed")
        /// The request is not a well-formed HTTP/2 request (a line break or NUL in the project
        /// id or a header value): never sent, and sending it again cannot help.
        package static let invalidRequest = Code(label: "invalid_request")
        /// The caller withdrew the request before it was written (`FCMRequest.stillWanted`).
        package static let withdrawn = Code(label: "withdrawn")

        package var description: String { self.label }
    }

    package var code: Code
    /// Safe detail: an endpoint's error name and description, a field name, an error type.
    package var detail: String
    /// Whether sending the same request again later can succeed.
    package var isRetriable: Bool
    /// Whether FCM may have accepted the message although no answer arrived (the request was
    /// written before the failure). A resend may then deliver it twice.
    package var mayHaveBeenDelivered: Bool

    package init(_ code: Code, _ detail: String, isRetriable: Bool? = nil, mayHaveBeenDelivered: Bool = false) {
        self.code = code
        self.detail = detail
        self.isRetriable = isRetriable ?? Self.retriableByDefault.contains(code)
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }

    private static let retriableByDefault: Set<Code> = [.connectFailed, .connectionClosed, .timeout, .transportFailed]

    package var description: String {
        "FCMClientError.\(self.code.label): \(self.detail)"
    }
}
