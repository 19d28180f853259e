import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization

/// The connections of one (environment, credentials) pair: `connectionsPerPool` slots, each a
/// long-lived HTTP/2 connection; a request goes to the slot carrying the fewest requests among
/// those not backing off.
final class APNSConnectionPool: Sendable {
    let environment: APNSEnvironment
    let credentialsId: String
    /// Shared with every other pool of the client that signs with the same key.
    let providerToken: APNSProviderToken?
    private let slots: [APNSConnectionSlot]
    private let baseURL: String
    private let requestTimeout: Duration
    private let logger: Logger
    /// Completions of connections replaced or retired, awaited by `close()`.
    private let closing = Mutex<[EventLoopFuture<Void>]>([])
    private let roundRobin = Mutex(0)

    init(
        environment: APNSEnvironment,
        credentials: APNSCredentials,
        providerToken: APNSProviderToken?,
        configuration: APNSClientConfiguration,
        eventLoopGroup: any EventLoopGroup,
        connectionCount: APNSConnectionCount,
        logger: Logger
    ) throws(APNSClientError) {
        self.environment = environment
        self.credentialsId = credentials.id
        self.providerToken = providerToken
        self.baseURL = configuration.baseURL(for: environment)
        self.requestTimeout = configuration.requestTimeout
        var poolLogger = logger
        poolLogger[metadataKey: "apns.pool"] = "\(environment.rawValue)/\(credentials.id)"
        self.logger = poolLogger
        let logger = poolLogger

        let tls = try Self.tlsConfiguration(configuration: configuration, credentials: credentials)
        let slotCount = max(1, configuration.connectionsPerPool)
        var slots: [APNSConnectionSlot] = []
        for index in 0..<slotCount {
            let health = SlotHealth()
            let slot = APNSConnectionSlot(index: index) { generation in
                let httpConfiguration = Self.httpConfiguration(
                    configuration: configuration,
                    tls: tls,
                    generation: generation,
                    health: health,
                    connectionCount: connectionCount,
                    logger: logger
                )
                let client = HTTPClient(eventLoopGroup: eventLoopGroup, configuration: httpConfiguration, backgroundActivityLogger: logger)
                return APNSConnection(client: client, generation: generation, eventLoop: eventLoopGroup.any())
            }
            health.slot.withLock { $0.slot = slot }
            slots.append(slot)
        }
        self.slots = slots
    }

    /// Sends once on the least loaded available connection. An answer of any status returns;
    /// no answer throws.
    func execute(
        _ request: APNSRequest,
        bearer: String?,
        on chosen: (slot: APNSConnectionSlot, connection: APNSConnection)? = nil
    ) async throws(APNSClientError) -> (APNSResponse, APNSConnectionSlot, APNSConnection) {
        let slot: APNSConnectionSlot
        let connection: APNSConnection
        if let chosen {
            (slot, connection) = (chosen.slot, chosen.connection)
        } else {
            (slot, connection) = try self.pick()
        }
        guard connection.begin() else {
            // Replaced between the pick and now: take the slot's new connection.
            return try await self.execute(request, bearer: bearer, on: (slot, slot.connection))
        }
        defer { connection.end() }
        let httpRequest = self.httpRequest(for: request, bearer: bearer)
        let deadline = NIODeadline.now() + TimeAmount(self.requestTimeout)
        do {
            let response = try await connection.client.execute(httpRequest, deadline: deadline, logger: self.logger)
            let body = try await response.body.collect(upTo: 64 * 1024)
            slot.answered()
            let answer = APNSResponse(status: Int(response.status.code), headers: response.headers, body: body)
            self.logger.debug(
                "apns answer",
                metadata: [
                    "apns.id": "\(answer.apnsId ?? request.apnsId.uuidString.lowercased())",
                    "apns.status": "\(answer.status)",
                    "apns.reason": "\(answer.reason?.rawValue ?? "")",
                    "apns.connection": "\(slot.index).\(connection.generation)",
                ]
            )
            return (answer, slot, connection)
        } catch {
            let failure = APNSClientError(transportError: error)
            if failure.code == .connectFailed || failure.code == .tlsFailed {
                slot.failedToConnect()
            }
            self.logger.debug(
                "apns send failed",
                metadata: ["apns.id": "\(request.apnsId.uuidString.lowercased())", "error": "\(failure)"]
            )
            throw failure
        }
    }

    /// Replaces a connection APNs asked to leave (IdleTimeout, UnrelatedKeyIdInToken).
    func replace(_ connection: APNSConnection, in slot: APNSConnectionSlot) -> APNSConnection {
        let current = slot.replace(connection)
        if current !== connection {
            self.logger.info("apns connection replaced", metadata: ["apns.connection": "\(slot.index).\(current.generation)"])
            self.closing.withLock { $0.append(connection.retire()) }
        }
        return current
    }

    /// The slot carrying the fewest requests among those not backing off (ties by round robin).
    func pick() throws(APNSClientError) -> (APNSConnectionSlot, APNSConnection) {
        let now = ContinuousClock.now
        let start = self.roundRobin.withLock {
            $0 &+= 1
            return $0
        }
        var best: (slot: APNSConnectionSlot, connection: APNSConnection, load: Int)?
        var soonest: APNSConnectionSlot.BackingOff?
        for offset in 0..<self.slots.count {
            let slot = self.slots[(start &+ offset) % self.slots.count]
            switch slot.available(at: now) {
            case .success(let connection):
                let load = connection.outstanding
                if best == nil || load < best!.load { best = (slot, connection, load) }
            case .failure(let backingOff):
                if soonest == nil || backingOff.until < soonest!.until { soonest = backingOff }
            }
        }
        if let best { return (best.slot, best.connection) }
        let wait = soonest.map { $0.until - now } ?? .zero
        throw APNSClientError(
            code: .connectFailed,
            isRetriable: true,
            mayHaveBeenDelivered: false,
            detail: "every connection of the pool is backing off after failed connects (\(soonest?.failures ?? 0) in a row; next try in \(wait))"
        )
    }

    /// Closes every connection once the requests it carries are answered.
    func close() async {
        let futures = self.slots.map { $0.connection.retire() } + self.closing.withLock { $0 }
        for future in futures {
            try? await future.get()
        }
    }

    // MARK: building requests and clients

    private func httpRequest(for request: APNSRequest, bearer: String?) -> HTTPClientRequest {
        var http = HTTPClientRequest(url: "\(self.baseURL)/3/device/\(request.deviceToken)")
        http.method = .POST
        var headers = HTTPHeaders()
        headers.reserveCapacity(9)
        if let bearer { headers.add(name: "authorization", value: "bearer \(bearer)") }
        headers.add(name: "apns-topic", value: request.topic)
        headers.add(name: "apns-push-type", value: request.pushType)
        headers.add(name: "apns-priority", value: String(request.priority))
        if let expiration = request.expiration {
            headers.add(name: "apns-expiration", value: String(Int64(max(0, expiration.timeIntervalSince1970.rounded(.down)))))
        }
        if let collapseId = request.collapseId { headers.add(name: "apns-collapse-id", value: collapseId) }
        headers.add(name: "apns-id", value: request.apnsId.uuidString.lowercased())
        headers.add(name: "content-type", value: "application/json")
        http.headers = headers
        http.body = .bytes(ByteBuffer(bytes: request.payload))
        return http
    }

    private static func tlsConfiguration(configuration: APNSClientConfiguration, credentials: APNSCredentials) throws(APNSClientError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let pem = configuration.trustedCAPEM {
            do {
                tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMBytes(Array(pem.utf8)))
            } catch {
                throw .badCredentials("trustedCAPEM is not a PEM certificate list")
            }
        }
        if case .certificate(let chain, let key) = credentials.material {
            tls.certificateChain = chain.map { .certificate($0) }
            tls.privateKey = .privateKey(key)
        }
        return tls
    }

    private static func httpConfiguration(
        configuration: APNSClientConfiguration,
        tls: TLSConfiguration,
        generation: Int,
        health: SlotHealth,
        connectionCount: APNSConnectionCount,
        logger: Logger
    ) -> HTTPClient.Configuration {
        var http = HTTPClient.Configuration()
        http.tlsConfiguration = tls
        http.redirectConfiguration = .disallow
        http.httpVersion = .automatic
        http.timeout = .init(connect: TimeAmount(configuration.connectTimeout))
        http.connectionPool.idleTimeout = TimeAmount(configuration.connectionIdleTimeout)
        // One connection: several connections come from several slots, each its own client.
        http.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
        // A connect failure fails the waiting requests at once; the slot's backoff (not AHC's
        // silent retries until the deadline) decides when the next connect happens.
        http.connectionPool.retryConnectionEstablishment = false
        let observe: @Sendable (any Channel) -> EventLoopFuture<Void> = { channel in
            connectionCount.opened()
            health.opened()
            logger.debug("apns connection open", metadata: ["apns.generation": "\(generation)"])
            channel.closeFuture.whenComplete { _ in
                connectionCount.closed()
                health.closed(generation: generation)
                logger.debug("apns connection closed", metadata: ["apns.generation": "\(generation)"])
            }
            return channel.eventLoop.makeSucceededVoidFuture()
        }
        http.http2ConnectionDebugInitializer = observe
        http.http1_1ConnectionDebugInitializer = observe
        return http
    }
}

/// Breaks the cycle slot -> connection -> client configuration -> slot: the channel observers
/// reach their slot through this box, filled once the slot exists.
/// It holds the slot weakly.
private final class SlotHealth: Sendable {
    struct WeakSlot {
        weak var slot: APNSConnectionSlot?
    }

    let slot = Mutex(WeakSlot())

    func opened() { self.slot.withLock { $0.slot }?.connectionOpened() }

    func closed(generation: Int) { self.slot.withLock { $0.slot }?.connectionClosed(generation: generation) }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
