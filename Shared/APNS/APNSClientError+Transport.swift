import PushHTTP2

extension APNSClientError {
    /// Classifies a failure of the HTTP/2 client: could the request have reached APNs?
    init(transportError error: any Error) {
        switch error {
        case let error as APNSClientError:
            self = error
        case let error as HTTP2ClientError:
            switch error.kind {
            case .connectFailed:
                self.init(code: .connectFailed, isRetriable: true, mayHaveBeenDelivered: false, detail: error.detail)
            case .tlsFailed:
                self.init(code: .tlsFailed, isRetriable: true, mayHaveBeenDelivered: false, detail: error.detail)
            case .notSent:
                // Refused, above the GOAWAY's last-stream-id, or never written: APNs did not
                // process it, so it can go again on another connection.
                self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: false, detail: error.detail)
            case .lostAnswer:
                self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: true, detail: error.detail)
            case .timeout:
                self.init(code: .timeout, isRetriable: true, mayHaveBeenDelivered: error.mayHaveBeenDelivered, detail: error.detail)
            case .shutDown:
                self = .shutDown()
            case .invalidRequest:
                self.init(code: .invalidRequest, isRetriable: false, mayHaveBeenDelivered: false, detail: error.detail)
            case .withdrawn:
                self.init(code: .withdrawn, isRetriable: true, mayHaveBeenDelivered: false, detail: error.detail)
            }
        case is CancellationError:
            self.init(code: .cancelled, isRetriable: true, mayHaveBeenDelivered: true, detail: "the sending task was cancelled")
        default:
            self.init(code: .connectionClosed, isRetriable: true, mayHaveBeenDelivered: true, detail: "connection failed before the answer: \(error)")
        }
    }
}
