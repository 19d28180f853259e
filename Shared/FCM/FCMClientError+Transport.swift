import AsyncHTTPClient
import NIOCore
import NIOHTTP2
import NIOPosix
import NIOSSL
import PushHTTP2

extension FCMClientError {
    /// Maps a failure of one HTTP exchange to a code. `requestWritten` says whether the request
    /// may have reached the server, so a lost answer may hide a delivered message.
    static func transport(_ error: any Error, endpoint: String, requestWritten: Bool) -> FCMClientError {
        let type = String(describing: Swift.type(of: error))
        if error is CancellationError {
            return FCMClientError(.cancelled, "\(endpoint): cancelled", isRetriable: true, mayHaveBeenDelivered: requestWritten)
        }
        if let error = error as? FCMClientError { return error }
        if let error = error as? HTTP2ClientError {
            switch error.kind {
            case .connectFailed:
                return FCMClientError(.connectFailed, "\(endpoint): \(error.detail)")
            case .tlsFailed:
                return FCMClientError(.tlsFailed, "\(endpoint): \(error.detail)", isRetriable: false)
            case .notSent:
                return FCMClientError(.connectionClosed, "\(endpoint): \(error.detail)", mayHaveBeenDelivered: false)
            case .lostAnswer:
                return FCMClientError(.connectionClosed, "\(endpoint): \(error.detail)", mayHaveBeenDelivered: requestWritten)
            case .timeout:
                return FCMClientError(.timeout, "\(endpoint): \(error.detail)", mayHaveBeenDelivered: requestWritten && error.mayHaveBeenDelivered)
            case .shutDown:
                return FCMClientError(.shutDown, "\(endpoint): \(error.detail)", isRetriable: false)
            case .invalidRequest:
                return FCMClientError(.invalidRequest, "\(endpoint): \(error.detail)", isRetriable: false)
            case .withdrawn:
                return FCMClientError(.withdrawn, "\(endpoint): \(error.detail)", mayHaveBeenDelivered: false)
            }
        }
        if let error = error as? HTTPClientError {
            let label = error.shortDescription
            switch error {
            case .connectTimeout, .getConnectionFromPoolTimeout, .invalidURL, .emptyHost, .emptyScheme:
                let retriable = error == .connectTimeout || error == .getConnectionFromPoolTimeout
                return FCMClientError(.connectFailed, "\(endpoint): \(label)", isRetriable: retriable)
            case .tlsHandshakeTimeout:
                return FCMClientError(.tlsFailed, "\(endpoint): \(label)", isRetriable: true)
            case .remoteConnectionClosed:
                return FCMClientError(.connectionClosed, "\(endpoint): \(label)", mayHaveBeenDelivered: requestWritten)
            case .deadlineExceeded, .readTimeout, .writeTimeout:
                return FCMClientError(.timeout, "\(endpoint): \(label)", mayHaveBeenDelivered: requestWritten)
            case .cancelled where !Task.isCancelled:
                // AsyncHTTPClient fails a request it could not open a stream for because the
                // connection is closing (after GOAWAY): nothing was written.
                return FCMClientError(.connectionClosed, "\(endpoint): no stream, the connection is closing", mayHaveBeenDelivered: false)
            case .cancelled:
                return FCMClientError(.cancelled, "\(endpoint): \(label)", isRetriable: true, mayHaveBeenDelivered: requestWritten)
            case .alreadyShutdown:
                return FCMClientError(.shutDown, "\(endpoint): \(label)", isRetriable: false)
            default:
                if label.contains("unsupported application protocol") {
                    return FCMClientError(.tlsFailed, "\(endpoint): \(label)", isRetriable: false)
                }
                return FCMClientError(.transportFailed, "\(endpoint): \(label)", mayHaveBeenDelivered: requestWritten)
            }
        }
        if error is NIOConnectionError {
            return FCMClientError(.connectFailed, "\(endpoint): connection refused or unreachable")
        }
        if let error = error as? IOError {
            return FCMClientError(.connectFailed, "\(endpoint): \(error.description)")
        }
        if let error = error as? ChannelError {
            switch error {
            case .connectTimeout:
                return FCMClientError(.connectFailed, "\(endpoint): connect timeout")
            case .ioOnClosedChannel:
                // A write on a connection that had already closed: the request, or at least its
                // end, never left, and FCM acts only on whole requests.
                return FCMClientError(.connectionClosed, "\(endpoint): the connection had closed before the request was written", mayHaveBeenDelivered: false)
            case .outputClosed, .inputClosed, .eof, .alreadyClosed:
                return FCMClientError(.connectionClosed, "\(endpoint): \(type)", mayHaveBeenDelivered: requestWritten)
            default:
                return FCMClientError(.transportFailed, "\(endpoint): ChannelError", mayHaveBeenDelivered: requestWritten)
            }
        }
        if error is NIOSSLError || error is BoringSSLError || error is NIOSSLExtraError {
            return FCMClientError(.tlsFailed, "\(endpoint): TLS handshake failed (\(type))", isRetriable: false)
        }
        if let closed = error as? NIOHTTP2Errors.StreamClosed, closed.errorCode == .refusedStream {
            // REFUSED_STREAM (e.g. a stream opened after the server's GOAWAY): not processed.
            return FCMClientError(.connectionClosed, "\(endpoint): stream refused by the server", mayHaveBeenDelivered: false)
        }
        if let closed = error as? NIOHTTP2Errors.StreamClosed, closed.errorCode == .cancel {
            // swift-nio-http2 closes the streams above a GOAWAY's last-stream-id with CANCEL:
            // the server never processed them (FCM answers what it processes; it does not reset).
            return FCMClientError(.connectionClosed, "\(endpoint): stream cut off by GOAWAY", mayHaveBeenDelivered: false)
        }
        if let closed = error as? NIOHTTP2Errors.StreamClosed {
            return FCMClientError(.connectionClosed, "\(endpoint): HTTP/2 stream closed (\(closed.errorCode))", mayHaveBeenDelivered: requestWritten)
        }
        if error is any NIOHTTP2Error {
            return FCMClientError(.connectionClosed, "\(endpoint): HTTP/2 stream ended (\(type))", mayHaveBeenDelivered: requestWritten)
        }
        return FCMClientError(.transportFailed, "\(endpoint): \(type)", mayHaveBeenDelivered: requestWritten)
    }
}
