import NIOCore
import NIOHPACK
import PushWire

/// One HTTP/2 request as a provider simulator sees it: pseudo-headers split out, every regular
/// header kept in order (duplicates included, because APNs answers `DuplicateHeaders`).
package struct SimulatorRequest: Sendable {
    package var method: String
    /// The path without the query string.
    package var path: String
    /// Decoded `?a=b&c=d` pairs of the `:path` (percent-decoded, `+` as space).
    package var query: [String: String]
    package var headers: HPACKHeaders
    package var body: ByteBuffer
    /// When the request reached the simulator (milliseconds since the epoch): its HEADERS frame,
    /// before the body is parsed and checked, so that what the log says arrived in a second is
    /// what a provider's rate limit would count, not when this process found time to answer.
    package var receivedAtMs: Int64

    package init(
        method: String, path: String, query: [String: String] = [:], headers: HPACKHeaders, body: ByteBuffer,
        receivedAtMs: Int64 = APNsBehaviour.nowMilliseconds()
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.receivedAtMs = receivedAtMs
    }

    /// Builds a request from the `:path` pseudo-header value (path and optional query).
    package init(method: String, rawPath: String, headers: HPACKHeaders, body: ByteBuffer, receivedAtMs: Int64 = APNsBehaviour.nowMilliseconds()) {
        if let mark = rawPath.firstIndex(of: "?") {
            self.init(
                method: method,
                path: String(rawPath[..<mark]),
                query: FormEncoding.decode(rawPath[rawPath.index(after: mark)...]),
                headers: headers,
                body: body,
                receivedAtMs: receivedAtMs
            )
        } else {
            self.init(method: method, path: rawPath, headers: headers, body: body, receivedAtMs: receivedAtMs)
        }
    }

    /// The single value of a header, or nil when absent.
    package func header(_ name: String) -> String? {
        self.headers.first(name: name)
    }
}

/// What a simulator answers to one request.
package struct SimulatorResponse: Sendable {
    package var status: Int
    package var headers: [(String, String)]
    package var body: ByteBuffer?
    /// The provider's reason or error code, for the counters (`nil` on success).
    package var reason: String?
    /// Extra delay before the answer is written (injected latency).
    package var delayMilliseconds: Int = 0
    /// Set when the request counted as a provider success on this connection (APNs raises the
    /// stream limit after the first one).
    package var succeeded: Bool { (200..<300).contains(self.status) }

    package init(status: Int, headers: [(String, String)] = [], body: ByteBuffer? = nil, reason: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.reason = reason
    }

    /// A JSON answer; `object` is serialised with `JSONSerialization`-compatible values.
    package static func json(
        status: Int,
        _ object: Any,
        headers: [(String, String)] = [],
        reason: String? = nil
    ) -> SimulatorResponse {
        let bytes = JSON.encode(object)
        var response = SimulatorResponse(
            status: status,
            headers: [(HTTPHeaderName.contentType, "application/json; charset=UTF-8")] + headers,
            body: ByteBuffer(bytes: bytes),
            reason: reason
        )
        response.reason = reason
        return response
    }
}
