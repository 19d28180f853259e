import NIOCore
import NIOHPACK
import NIOHTTP2
import PushWire

/// One request to send on a stream: the pseudo-headers come from `method`, `path` and the
/// endpoint's authority; `headers` are the regular ones (lower-case names).
package struct HTTP2Request: Sendable {
    package var method: String
    package var path: String
    package var headers: HPACKHeaders
    package var body: ByteBuffer
    /// Whether HPACK may add the path to the connection's dynamic table: `.nonIndexable` for a
    /// path that will not repeat (APNs puts the device token in it), so that each request
    /// neither evicts entries that do repeat (the authorization header) nor makes the server
    /// store it. Header values carry their own indexing (`HPACKHeaders.add(name:value:indexing:)`).
    package var pathIndexing: HPACKIndexing
    /// Asked just before the request is written (after any wait for a stream): false withdraws
    /// it, and it fails `.withdrawn` without reaching the server. Nil: always sent.
    package var stillWanted: (@Sendable () -> Bool)?

    package init(
        method: String = "POST", path: String, headers: HPACKHeaders = [:], body: ByteBuffer, pathIndexing: HPACKIndexing = .indexable,
        stillWanted: (@Sendable () -> Bool)? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.pathIndexing = pathIndexing
        self.stillWanted = stillWanted
    }
}

/// A whole answer: the final status, its headers and the body (trailers are ignored).
package struct HTTP2Response: Sendable {
    package var status: Int
    package var headers: HPACKHeaders
    package var body: ByteBuffer

    package init(status: Int, headers: HPACKHeaders, body: ByteBuffer) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Why no answer came, and whether the server may have acted on the request anyway.
///
/// The client knows which requests never reached the server: a connection that could not be
/// opened, a stream the server refused (REFUSED_STREAM) or cut off with a GOAWAY whose
/// last-stream-id is below it, a request whose first frame was never written. Only those are
/// `.notSent`; every other lost answer may hide a delivered request.
package struct HTTP2ClientError: Error, Sendable, CustomStringConvertible {
    package enum Kind: String, Sendable {
        /// TCP connect failed or timed out: nothing was sent.
        case connectFailed
        /// The TLS handshake failed, or the server did not speak h2: nothing was sent.
        case tlsFailed
        /// The request provably never reached the server (refused, above GOAWAY, never written).
        case notSent
        /// The request was written, and the stream or connection ended without an answer.
        case lostAnswer
        /// No answer before the deadline.
        case timeout
        /// The endpoint is shut down.
        case shutDown
        /// The request cannot be sent as it is (a line break or NUL in its path or a header
        /// value, which HTTP/2 forbids): sending it again cannot help.
        case invalidRequest
        /// The caller withdrew the request (`HTTP2Request.stillWanted`) before it was written.
        case withdrawn
    }

    package var kind: Kind
    package var detail: String
    /// False only when the server provably did not receive the request.
    package var mayHaveBeenDelivered: Bool

    package init(_ kind: Kind, _ detail: String, mayHaveBeenDelivered: Bool) {
        self.kind = kind
        self.detail = detail
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
    }

    package var description: String { "\(self.kind.rawValue): \(self.detail)" }
}

extension HTTP2Request {
    /// Why the request is not a well-formed HTTP/2 request, if it is not: RFC 9113 section 8.2.1
    /// forbids NUL, CR and LF in field values (the path included). The header names are the
    /// clients' own constants. swift-nio-http2's own validation of every header block is off
    /// (`HTTP2Endpoint`): it was about 4 % of a sender's CPU, and this is the part of it that
    /// values from messages can break.
    func malformation() -> String? {
        if Self.hasForbiddenByte(self.path) { return "the path holds a NUL, CR or LF" }
        for (name, value, _) in self.headers where Self.hasForbiddenByte(value) {
            return "the value of header \(name) holds a NUL, CR or LF"
        }
        return nil
    }

    /// One comparison per byte for nearly all of them (every forbidden byte is below 14): the
    /// check reads each request's path and header values, the 200-byte JWT included.
    private static func hasForbiddenByte(_ text: String) -> Bool {
        func scan(_ bytes: some Sequence<UInt8>) -> Bool {
            for byte in bytes where byte < 0x0E && (byte == 0 || byte == 0x0A || byte == 0x0D) { return true }
            return false
        }
        return text.utf8.withContiguousStorageIfAvailable { scan($0) } ?? scan(text.utf8)
    }
}

/// One request on one stream, from its HEADERS to its answer: the connection's handler feeds it
/// the stream's frames and completes it exactly once.
///
/// It completes as soon as the answer's last frame is read, before the stream or the connection
/// closes, so a connection that closes right after answering never loses an answer it delivered.
final class HTTP2Exchange {
    let request: HTTP2Request
    let promise: EventLoopPromise<HTTP2Response>
    let deadline: NIODeadline
    private var status: Int?
    private var headers: HPACKHeaders = [:]
    private var body: ByteBuffer?
    private(set) var completed = false
    /// The request's HEADERS frame reached the socket.
    var headersWritten = false

    /// Provider answers are a few hundred bytes; a larger one is not read into memory.
    static let maximumBodyBytes = 1 << 20

    init(request: HTTP2Request, deadline: NIODeadline, promise: EventLoopPromise<HTTP2Response>) {
        self.request = request
        self.deadline = deadline
        self.promise = promise
    }

    /// The request's HEADERS (pseudo-headers first, then the request's, then content-length).
    func requestHeaders(authority: String) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(5 + self.request.headers.count)
        headers.add(name: ":method", value: self.request.method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: self.request.path, indexing: self.request.pathIndexing)
        headers.add(contentsOf: self.request.headers)
        headers.add(name: HTTPHeaderName.contentLength, value: String(self.request.body.readableBytes))
        return headers
    }

    /// Reads one frame of the answer; true once the exchange is complete (answered or failed).
    func receive(_ payload: HTTP2Frame.FramePayload) -> Bool {
        switch payload {
        case .headers(let frame):
            if self.status == nil {
                guard let value = frame.headers.first(name: ":status"), let status = Int(value) else {
                    self.fail(HTTP2ClientError(.lostAnswer, "an answer without a :status", mayHaveBeenDelivered: true))
                    return true
                }
                if (100..<200).contains(status) { return false }  // informational: the real answer follows
                self.status = status
                self.headers = frame.headers
            }
            if frame.endStream { return self.succeed() }
        case .data(let frame):
            if case .byteBuffer(var bytes) = frame.data {
                guard (self.body?.readableBytes ?? 0) + bytes.readableBytes <= Self.maximumBodyBytes else {
                    self.fail(HTTP2ClientError(.lostAnswer, "an answer body over \(Self.maximumBodyBytes) bytes", mayHaveBeenDelivered: true))
                    return true
                }
                if self.body == nil {
                    self.body = bytes
                } else {
                    self.body!.writeBuffer(&bytes)
                }
            }
            if frame.endStream { return self.succeed() }
        default:
            break
        }
        return false
    }

    private func succeed() -> Bool {
        guard let status = self.status else {
            self.fail(HTTP2ClientError(.lostAnswer, "the stream ended without an answer", mayHaveBeenDelivered: true))
            return true
        }
        guard !self.completed else { return true }
        self.completed = true
        self.promise.succeed(HTTP2Response(status: status, headers: self.headers, body: self.body ?? ByteBuffer()))
        return true
    }

    func fail(_ error: HTTP2ClientError) {
        guard !self.completed else { return }
        self.completed = true
        self.promise.fail(error)
    }

    /// The stream closed without an answer (`reason` as the stream's closing said): could the
    /// server have acted on the request?
    func lost(reason: HTTP2ErrorCode?, aboveGoAway: Bool) -> HTTP2ClientError {
        switch reason {
        case .refusedStream?:
            return HTTP2ClientError(.notSent, "stream refused by the server (REFUSED_STREAM)", mayHaveBeenDelivered: false)
        case .cancel? where aboveGoAway:
            // swift-nio-http2 closes the streams above a GOAWAY's last-stream-id with CANCEL:
            // by the GOAWAY's own word, the server did not process them.
            return HTTP2ClientError(.notSent, "stream above the server's GOAWAY last-stream-id", mayHaveBeenDelivered: false)
        case let reason?:
            return HTTP2ClientError(.lostAnswer, "stream reset (\(reason)) before the answer", mayHaveBeenDelivered: true)
        case nil:
            return self.lostWithConnection("the stream closed")
        }
    }

    /// The connection closed (or the stream ended) before the answer.
    func lostWithConnection(_ cause: String) -> HTTP2ClientError {
        guard self.headersWritten else {
            return HTTP2ClientError(.notSent, "the connection closed before the request was written (\(cause))", mayHaveBeenDelivered: false)
        }
        return HTTP2ClientError(.lostAnswer, "no answer: \(cause)", mayHaveBeenDelivered: true)
    }
}
