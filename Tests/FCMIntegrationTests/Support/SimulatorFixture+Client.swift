import FCM
import Foundation
import NIOPosix
import Testing

/// The client side of the fixture: service accounts, configurations and clients for the simulator.
extension SimulatorFixture.Account {
    func serviceAccount(id: String? = nil) throws -> FCMServiceAccount {
        try FCMServiceAccount(id: id ?? "\(self.project)-key", json: self.json())
    }
}

extension SimulatorFixture {
    /// A client configuration for this simulator (its CA trusted, tokens from its `/token`).
    func configuration(connections: Int = 2, tokenRefreshMargin: Duration = .seconds(300)) -> FCMClientConfiguration {
        FCMClientConfiguration(
            baseURL: self.baseURL,
            tokenURLOverride: "\(self.baseURL)/token",
            trustedCAPEM: self.server.caCertificatePEM,
            connections: connections,
            // A TLS handshake of the debug build took over 5 s on a loaded machine (six test
            // processes on two cores); a refused connection still fails at once.
            connectTimeout: .seconds(20),
            // Not what these tests measure: a request's deadline counts its wait in the client's
            // queue, and a 2,000-send burst through a debug-build client and simulator sharing
            // one process took over 30 s on two cores shared with four other test processes
            // (CI's shards): batches of 100 streams answered every 3 to 4 s, the earliest sends
            // expired still queued. Tests of deadlines set their own.
            requestTimeout: .seconds(180),
            tokenRefreshMargin: tokenRefreshMargin,
            throttle: FCMProjectThrottle.Configuration(recheckInterval: .milliseconds(20))
        )
    }

    /// Runs `body` with a client and shuts the client down afterwards, whatever happens.
    func withClient<T>(
        _ configuration: FCMClientConfiguration? = nil,
        now: @escaping @Sendable () -> Date = Date.init,
        _ body: (FCMClient) async throws -> T
    ) async throws -> T {
        try await Self.withClient(configuration ?? self.configuration(), now: now, body)
    }

    static func withClient<T>(
        _ configuration: FCMClientConfiguration,
        now: @escaping @Sendable () -> Date = Date.init,
        _ body: (FCMClient) async throws -> T
    ) async throws -> T {
        let client = FCMClient(configuration: configuration, eventLoopGroup: MultiThreadedEventLoopGroup.singleton, logger: Self.quietLogger, now: now)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    /// A message object with a device token and `data._mId`.
    static func dataMessage(token: String, mId: String, extra: String = "") -> FCMRequestBody {
        FCMRequestBody(#"{"token":"\#(token)","data":{"_mId":"\#(mId)","k":"v"}\#(extra)}"#)
    }

}

/// JSON text of an FCM `message` object.
struct FCMRequestBody {
    var text: String
    init(_ text: String) { self.text = text }

    func request(project: String) -> FCMRequest {
        FCMRequest(projectId: project, message: Array(self.text.utf8))
    }
}

/// The two ways to send: the async `send`, and the callback `send` the senders use (whose rare
/// paths the caller continues with `send(continuing:)`, as the sender does). Tests of the
/// client's token and resend rules run through both.
enum SendAPI: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case async
    case callback

    var testDescription: String { "through the \(rawValue) send" }
}

extension FCMClient {
    func send(_ request: FCMRequest, account: FCMServiceAccount, via api: SendAPI) async throws(FCMClientError) -> FCMResponse {
        switch api {
        case .async:
            return try await self.send(request, account: account)
        case .callback:
            let result = await withCheckedContinuation { (continuation: CheckedContinuation<FCMClient.CallbackResult, Never>) in
                self.send(request, account: account) { continuation.resume(returning: $0) }
            }
            switch result {
            case .answered(let response): return response
            case .failed(let error): throw error
            case .needsAsync(let pending): return try await self.send(continuing: pending)
            }
        }
    }
}
