import Foundation
import Logging
import NIOCore
import NIOHPACK
import NIOSSL
import PushHTTP2
import PushWire
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
    /// The base URL's path, before `/3/device/<token>` (empty for APNs itself).
    /// `<base path>/3/device/`: each request's path is this and the device token.
    private let devicePath: String
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
        let baseURL = configuration.baseURL(for: environment)
        guard let origin = HTTP2Origin(url: baseURL) else {
            throw .badCredentials("the APNs base URL \(baseURL) is not https://host[:port]")
        }
        self.devicePath = origin.pathPrefix + "/3/device/"
        self.requestTimeout = configuration.requestTimeout
        var poolLogger = logger
        poolLogger[metadataKey: "apns.pool"] = "\(environment.rawValue)/\(credentials.id)"
        self.logger = poolLogger
        let logger = poolLogger

        let tls = try Self.tlsConfiguration(configuration: configuration, credentials: credentials)
        let sslContext: NIOSSLContext
        do {
            sslContext = try HTTP2Endpoint.makeSSLContext(tls)
        } catch {
            throw .badCredentials("the TLS settings are unusable: \(error)")
        }
        let endpointConfiguration = HTTP2Endpoint.Configuration(
            origin: origin,
            sslContext: sslContext,
            connectTimeout: TimeAmount(configuration.connectTimeout),
            idleTimeout: TimeAmount(configuration.connectionIdleTimeout)
        )
        let slotCount = max(1, configuration.connectionsPerPool)
        var slots: [APNSConnectionSlot] = []
        for index in 0..<slotCount {
            let health = SlotHealth()
            let slot = APNSConnectionSlot(index: index) { generation in
                let endpoint = HTTP2Endpoint(
                    configuration: endpointConfiguration,
                    eventLoop: eventLoopGroup.next(),
                    onConnectionOpened: Self.observer(generation: generation, health: health, connectionCount: connectionCount, logger: logger)
                )
                return APNSConnection(endpoint: endpoint, generation: generation)
            }
            health.slot.withLock { $0.slot = slot }
            slots.append(slot)
        }
        self.slots = slots
    }

    /// What `start` and `execute` give back: the answer, and the connection that carried it.
    typealias Answer = (response: APNSResponse, slot: APNSConnectionSlot, connection: APNSConnection)

    /// Sends once on the least loaded available connection. An answer of any status returns;
    /// no answer throws.
    func execute(
        _ request: APNSRequest,
        authorization: String?,
        on chosen: (slot: APNSConnectionSlot, connection: APNSConnection)? = nil
    ) async throws(APNSClientError) -> Answer {
        let result = await withUnsafeContinuation { (continuation: UnsafeContinuation<Result<Answer, APNSClientError>, Never>) in
            self.start(request, authorization: authorization, on: chosen) { continuation.resume(returning: $0) }
        }
        return try result.get()
    }

    /// `execute` without a task: `completion` is called once, on the connection's event loop
    /// (or at once when no connection can be picked).
    func start(
        _ request: APNSRequest,
        authorization: String?,
        on chosen: (slot: APNSConnectionSlot, connection: APNSConnection)? = nil,
        completion: @escaping @Sendable (Result<Answer, APNSClientError>) -> Void
    ) {
        var slot: APNSConnectionSlot
        var connection: APNSConnection
        if let chosen {
            (slot, connection) = (chosen.slot, chosen.connection)
        } else {
            do {
                (slot, connection) = try self.pick()
            } catch {
                completion(.failure(error))
                return
            }
        }
        // Replaced between the pick and now: take the slot's new connection.
        while !connection.begin() { connection = slot.connection }
        let httpRequest = self.httpRequest(for: request, authorization: authorization)
        let deadline = NIODeadline.now() + TimeAmount(self.requestTimeout)
        let logger = self.logger
        connection.endpoint.send(httpRequest, deadline: deadline) { [slot, connection] result in
            connection.end()
            switch result {
            case .success(let response):
                slot.answered()
                let answer = APNSResponse(status: response.status, headers: response.headers, body: response.body)
                logger.debug(
                    "apns answer",
                    metadata: [
                        "apns.id": "\(answer.apnsId ?? request.apnsId.lowercaseText)",
                        "apns.status": "\(answer.status)",
                        "apns.reason": "\(answer.reason?.rawValue ?? "")",
                        "apns.connection": "\(slot.index).\(connection.generation)",
                    ]
                )
                completion(.success((answer, slot, connection)))
            case .failure(let error):
                let failure = APNSClientError(transportError: error)
                if failure.code == .connectFailed || failure.code == .tlsFailed {
                    slot.failedToConnect()
                }
                logger.debug("apns send failed", metadata: ["apns.id": "\(request.apnsId.lowercaseText)", "error": "\(failure)"])
                completion(.failure(failure))
            }
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

    private func httpRequest(for request: APNSRequest, authorization: String?) -> HTTP2Request {
        var headers = HPACKHeaders()
        headers.reserveCapacity(8)
        if let authorization { headers.add(name: HTTPHeaderName.authorization, value: authorization) }
        headers.add(name: HTTPHeaderName.apnsTopic, value: request.topic)
        headers.add(name: HTTPHeaderName.apnsPushType, value: request.pushType)
        headers.add(name: HTTPHeaderName.apnsPriority, value: String(request.priority))
        if let expiration = request.expiration {
            headers.add(name: HTTPHeaderName.apnsExpiration, value: String(Int64(max(0, expiration.timeIntervalSince1970.rounded(.down)))))
        }
        if let collapseId = request.collapseId { headers.add(name: HTTPHeaderName.apnsCollapseID, value: collapseId) }
        // apns-id and the path (device token) differ on every request: not indexed, so HPACK's
        // dynamic table keeps the headers that repeat (authorization, topic, expiration).
        headers.add(name: HTTPHeaderName.apnsID, value: request.apnsId.lowercaseText, indexing: .nonIndexable)
        headers.add(name: HTTPHeaderName.contentType, value: "application/json")
        return HTTP2Request(
            path: self.devicePath + request.deviceToken, headers: headers, body: request.payload, pathIndexing: .nonIndexable,
            stillWanted: request.stillWanted
        )
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

    /// Counts the endpoint's connections and tells the slot when one opens and closes.
    private static func observer(
        generation: Int,
        health: SlotHealth,
        connectionCount: APNSConnectionCount,
        logger: Logger
    ) -> @Sendable (any Channel) -> Void {
        { channel in
            connectionCount.opened()
            health.opened()
            logger.debug("apns connection open", metadata: ["apns.generation": "\(generation)"])
            channel.closeFuture.whenComplete { _ in
                connectionCount.closed()
                health.closed(generation: generation)
                logger.debug("apns connection closed", metadata: ["apns.generation": "\(generation)"])
            }
        }
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
