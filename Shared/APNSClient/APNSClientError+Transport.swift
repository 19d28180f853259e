import AsyncHTTPClient
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL

extension APNSClientError {
    /// Classifies a failure of AsyncHTTPClient or NIO: could the request have reached APNs?
    init(transportError error: any Error) {
        switch error {
        case let error as APNSClientError:
            self = error
        case let error as HTTPClientError:
            self = Self.classify(error)
        case is NIOConnectionError, is SocketAddressError:
            self.init(code: .connectFailed, isRetriable: true, mayHaveBeenDelivered: false, detail: "connect failed: \(error)")
        case let error as IOError where Self.connectErrnos.contains(error.errnoCode):
            // NIO reports a refused connect as an IOError of the connect call.
            self.init(code: .connectFailed, isRetriable: true, mayHaveBeenDelivered: false, detail: "connect failed: \(error)")
        case ChannelError.connectTimeout:
            self.init(code: .timeout, isRetriable: true, mayHaveBeenDelivered: false, detail: "connect timeout")
        case is NIOSSLError, is BoringSSLError, is NIOSSLExtraError:
            self.init(code: .tlsFailed, isRetriable: true, mayHaveBeenDelivered: false, detail: "TLS failed: \(error)")
        case let error as NIOHTTP2Errors.StreamClosed where error.errorCode == .refusedStream:
            // REFUSED_STREAM: APNs did not process it.
            self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: false, detail: "stream refused")
        case let error as NIOHTTP2Errors.StreamClosed where error.errorCode == .cancel:
            // swift-nio-http2 closes the streams above a GOAWAY's last-stream-id with CANCEL: the
            // server never processed them. (APNs answers the streams it processes; it does not
            // reset them. A send retried on this ground that did arrive twice would show in the
            // fault-injection suite, whose bound counts only the sender's own retries.)
            self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: false, detail: "stream cut off by GOAWAY")
        case ChannelError.ioOnClosedChannel:
            // A write on a connection that had already closed (a GOAWAY'd one drained and shut):
            // the request, or at least its end, never left, and APNs acts only on whole requests.
            self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: false, detail: "the connection had closed before the request was written")
        case is CancellationError:
            self.init(code: .cancelled, isRetriable: true, mayHaveBeenDelivered: true, detail: "the sending task was cancelled")
        default:
            self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: true, detail: "connection failed before the answer: \(error)")
        }
    }

    /// errno values that only a connect attempt produces: nothing was sent.
    private static let connectErrnos: Set<CInt> = [ECONNREFUSED, ENETUNREACH, EHOSTUNREACH, EADDRNOTAVAIL, EHOSTDOWN, ENETDOWN]

    private static func classify(_ error: HTTPClientError) -> APNSClientError {
        switch error {
        case .connectTimeout:
            APNSClientError(code: .timeout, isRetriable: true, mayHaveBeenDelivered: false, detail: "connect timeout")
        case .tlsHandshakeTimeout:
            APNSClientError(code: .tlsFailed, isRetriable: true, mayHaveBeenDelivered: false, detail: "TLS handshake timeout")
        case .deadlineExceeded, .readTimeout, .writeTimeout, .getConnectionFromPoolTimeout:
            APNSClientError(code: .timeout, isRetriable: true, mayHaveBeenDelivered: true, detail: "no answer before the deadline (\(error))")
        case .alreadyShutdown:
            APNSClientError.shutDown()
        case .cancelled where Task.isCancelled:
            APNSClientError(code: .cancelled, isRetriable: true, mayHaveBeenDelivered: true, detail: "request cancelled")
        case .cancelled:
            // AHC fails a request it handed to a connection that started closing (GOAWAY) before
            // the stream was opened: nothing was sent.
            APNSClientError(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: false, detail: "connection closing before the request was sent")
        default:
            APNSClientError(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: true, detail: "\(error)")
        }
    }
}
