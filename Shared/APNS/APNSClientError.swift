/// A send that got no APNs answer, or a credential that could not be loaded. The description
/// never holds keys, tokens or payloads.
package struct APNSClientError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, as an open set of codes with a short metric-safe label.
    package struct Code: Hashable, Sendable, CustomStringConvertible {
        /// Short label for metrics and logs.
        package let label: String

        private init(_ label: String) {
            self.label = label
        }

        package var description: String { self.label }

        /// TCP connect failed (refused, unreachable, DNS) or the pool is backing off after such
        /// failures. The request never left this process.
        package static let connectFailed = Code("connect_failed")
        /// The TLS handshake failed (untrusted server certificate, refused client certificate).
        package static let tlsFailed = Code("tls_failed")
        /// The connection closed or reset before the answer came.
        package static let connectionClosed = Code("connection_closed")
        /// No answer before the request deadline.
        package static let timeout = Code("timeout")
        /// The credentials could not be read (key does not parse, PKCS#12 password wrong).
        package static let badCredentials = Code("bad_credentials")
        /// The client was shut down.
        package static let shutDown = Code("shut_down")
        /// The calling task was cancelled while the request was under way.
        package static let cancelled = Code("cancelled")
        /// The request is not a well-formed HTTP/2 request (a line break or NUL in the device
        /// token, topic, push type or collapse id): never sent, and sending it again cannot help.
        package static let invalidRequest = Code("invalid_request")
        /// The caller withdrew the request before it was written (`APNSRequest.stillWanted`).
        package static let withdrawn = Code("withdrawn")
    }

    package var code: Code
    /// Whether sending the same request again later may succeed.
    package var isRetriable: Bool
    /// Whether the request may have reached APNs (so a resend may duplicate it on the device;
    /// the collapse id makes that harmless).
    package var mayHaveBeenDelivered: Bool
    /// Detail for operators: never secrets.
    package var detail: String

    package init(code: Code, isRetriable: Bool, mayHaveBeenDelivered: Bool, detail: String) {
        self.code = code
        self.isRetriable = isRetriable
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
        self.detail = detail
    }

    package var description: String {
        "APNSClientError(\(self.code.label), retriable: \(self.isRetriable), mayHaveBeenDelivered: \(self.mayHaveBeenDelivered)): \(self.detail)"
    }

    static func badCredentials(_ detail: String) -> APNSClientError {
        APNSClientError(code: .badCredentials, isRetriable: false, mayHaveBeenDelivered: false, detail: detail)
    }

    static func shutDown() -> APNSClientError {
        APNSClientError(code: .shutDown, isRetriable: true, mayHaveBeenDelivered: false, detail: "the APNs client is shut down")
    }
}
