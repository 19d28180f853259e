import APNS
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import ProviderSimulatorCore
import PushTestSupport
import Testing

extension APNSClientIntegrationTests {
    @Suite("connections")
    struct Connections {
        let key = TestKey()

        /// Sends `count` pushes at once; returns the statuses and the errors.
        func burst(_ count: Int, client: APNSClient, credentials: APNSCredentials, via api: SendAPI = .async) async -> (
            statuses: [Int: Int], errors: [APNSClientError]
        ) {
            await withTaskGroup(of: Result<Int, APNSClientError>.self) { group in
                for index in 0..<count {
                    group.addTask {
                        do throws(APNSClientError) {
                            return .success(
                                try await client.send(Harness.request(mId: "burst-\(index)"), credentials: credentials, environment: .production, via: api)
                                    .status)
                        } catch {
                            return .failure(error)
                        }
                    }
                }
                var statuses: [Int: Int] = [:]
                var errors: [APNSClientError] = []
                for await result in group {
                    switch result {
                    case .success(let status): statuses[status, default: 0] += 1
                    case .failure(let error): errors.append(error)
                    }
                }
                return (statuses, errors)
            }
        }

        @Test("2,000 concurrent sends through two long-lived connections; no churn")
        func concurrentSends() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server, connections: 2)) { client in
                    let credentials = try self.key.credentials()
                    let (statuses, errors) = await self.burst(2000, client: client, credentials: credentials)
                    #expect(errors.isEmpty, "\(errors.prefix(3))")
                    #expect(statuses == [200: 2000])
                    #expect(client.openConnections == 2)
                    #expect(server.state.counters.connections == 2)
                    #expect(server.connections.count == 2)
                    #expect(server.state.counters.peakConcurrentStreams > 1)
                }
            }
        }

        @Test(
            "GOAWAY mid-burst: every send answered 200, each notification accepted exactly once, the client reconnects, later sends succeed",
            arguments: SendAPI.allCases)
        func goAwayMidBurst(api: SendAPI) async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                try await Harness.withClient(Harness.configuration(for: server, connections: 2)) { client in
                    let credentials = try self.key.credentials()
                    async let outcome = self.burst(2000, client: client, credentials: credentials, via: api)
                    try await eventually(within: .seconds(60), "server.state.counters.accepted >= 300") { server.state.counters.accepted >= 300 }
                    // What `POST /_control/goaway` does: GOAWAY on every open connection.
                    server.goAwayAll()
                    let (statuses, errors) = await outcome
                    // Streams the GOAWAY cut off were provably not processed and were resent at
                    // once on new connections; streams it let through were answered before the
                    // connection closed. Nothing is lost, nothing arrives twice.
                    #expect(statuses == [200: 2000])
                    #expect(errors.isEmpty, "\(errors.prefix(3))")
                    #expect(server.state.counters.accepted == 2000)
                    #expect(server.state.counters.goAways >= 2)

                    let (after, afterErrors) = await self.burst(100, client: client, credentials: credentials, via: api)
                    #expect(after == [200: 100])
                    #expect(afterErrors.isEmpty, "\(afterErrors.prefix(3))")
                    try await eventually(within: .seconds(10), "client.openConnections == 2 && server.connections.count == 2") {
                        client.openConnections == 2 && server.connections.count == 2
                    }
                    // Two connections before the GOAWAY, two after it: nothing in between.
                    #expect(server.state.counters.connections == 4)
                }
            }
        }

        @Test(
            "a server allowing 8 streams: the client never opens more; at a GOAWAY the requests still waiting for a stream move to a new connection, each answered once"
        )
        func streamLimitAndGoAway() async throws {
            try await Harness.withSimulator(keys: [self.key], maxConcurrentStreams: 8) { server in
                try await Harness.withClient(Harness.configuration(for: server, connections: 1)) { client in
                    let credentials = try self.key.credentials()
                    async let outcome = self.burst(600, client: client, credentials: credentials)
                    try await eventually(within: .seconds(60), "server.state.counters.accepted >= 100") { server.state.counters.accepted >= 100 }
                    server.goAwayAll()
                    let (statuses, errors) = await outcome
                    #expect(statuses == [200: 600])
                    #expect(errors.isEmpty, "\(errors.prefix(3))")
                    #expect(server.state.counters.accepted == 600)
                    // Streams above the limit would have been refused by the simulator.
                    #expect(server.state.counters.peakConcurrentStreams <= 8)
                    #expect(server.state.counters.goAways >= 1)
                    #expect(server.state.counters.connections == 2)
                }
            }
        }

        @Test("connection refused: a retriable error, well under the connect timeout, then backoff")
        func connectionRefused() async throws {
            let configuration = try await Harness.withSimulator(keys: [self.key]) { server in
                Harness.configuration(for: server)
            }
            // The simulator is shut down: its port refuses connections.
            try await Harness.withClient(configuration) { client in
                let credentials = try self.key.credentials()
                let started = ContinuousClock.now
                do {
                    _ = try await client.send(Harness.request(), credentials: credentials, environment: .production)
                    Issue.record("a send to a closed port succeeded")
                } catch {
                    let error = try #require(error as? APNSClientError)
                    #expect(error.code == .connectFailed, "\(error)")
                    #expect(error.isRetriable)
                    #expect(!error.mayHaveBeenDelivered)
                }
                #expect(ContinuousClock.now - started < .seconds(3))
                #expect(client.openConnections == 0)

                // Every connection of the pool eventually backs off; sends then fail at once
                // instead of hammering the host.
                var failures = 0
                for _ in 0..<4 {
                    do {
                        _ = try await client.send(Harness.request(), credentials: credentials, environment: .production)
                    } catch {
                        let error = try #require(error as? APNSClientError)
                        #expect(error.code == .connectFailed && error.isRetriable && !error.mayHaveBeenDelivered)
                        failures += 1
                    }
                }
                #expect(failures == 4)
            }
        }

        @Test("a server certificate the client does not trust: tlsFailed, not delivered")
        func untrustedServer() async throws {
            try await Harness.withSimulator(keys: [self.key]) { server in
                var configuration = Harness.configuration(for: server)
                configuration.trustedCAPEM = try SimulatorTLS.generated().caCertificatePEM
                try await Harness.withClient(configuration) { client in
                    do {
                        _ = try await client.send(Harness.request(), credentials: try self.key.credentials(), environment: .production)
                        Issue.record("an untrusted server was accepted")
                    } catch {
                        let error = try #require(error as? APNSClientError)
                        #expect(error.code == .tlsFailed, "\(error)")
                        #expect(!error.mayHaveBeenDelivered)
                    }
                    #expect(server.state.counters.accepted == 0)
                }
            }
        }

        @Test("a TLS server that does not negotiate h2 (ALPN http/1.1 only): tlsFailed naming ALPN, not delivered")
        func noHTTP2() async throws {
            let tls = try SimulatorTLS.generated()
            var serverTLS = TLSConfiguration.makeServerConfiguration(
                certificateChain: try NIOSSLCertificate.fromPEMBytes(Array(tls.certificateChainPEM.utf8)).map { .certificate($0) },
                privateKey: .privateKey(try NIOSSLPrivateKey(bytes: Array(tls.privateKeyPEM.utf8), format: .pem))
            )
            serverTLS.applicationProtocols = ["http/1.1"]
            let context = try NIOSSLContext(configuration: serverTLS)
            let server = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .childChannelInitializer { channel in
                    channel.eventLoop.makeCompletedFuture { try channel.pipeline.syncOperations.addHandler(NIOSSLServerHandler(context: context)) }
                }
                .bind(host: "127.0.0.1", port: 0).get()
            let port = try #require(server.localAddress?.port)
            let configuration = APNSClientConfiguration(
                productionBaseURL: "https://127.0.0.1:\(port)", sandboxBaseURL: "https://127.0.0.1:\(port)",
                trustedCAPEM: tls.caCertificatePEM, connectionsPerPool: 1, connectTimeout: .seconds(10), requestTimeout: .seconds(10)
            )
            do {
                try await Harness.withClient(configuration) { client in
                    do {
                        _ = try await client.send(Harness.request(), credentials: try self.key.credentials(), environment: .production)
                        Issue.record("a server without h2 was used")
                    } catch {
                        let error = try #require(error as? APNSClientError)
                        #expect(error.code == .tlsFailed, "\(error)")
                        #expect("\(error)".contains("ALPN"), "\(error)")
                        #expect(!error.mayHaveBeenDelivered)
                    }
                }
            } catch {
                try? await server.close()
                throw error
            }
            try await server.close()
        }

        @Test("retiring a pool closes its connections; shutdown refuses later sends")
        func retireAndShutdown() async throws {
            let other = TestKey(teamId: "TEAM654321", keyId: "KEY7654321")
            try await Harness.withSimulator(keys: [self.key, other]) { server in
                let client = APNSClient(
                    configuration: Harness.configuration(for: server),
                    eventLoopGroup: MultiThreadedEventLoopGroup.singleton,
                    logger: Harness.quietLogger
                )
                let old = try self.key.credentials(id: "sha256:old")
                let new = try other.credentials(id: "sha256:new")
                _ = await self.burst(20, client: client, credentials: old)
                _ = await self.burst(20, client: client, credentials: new)
                #expect(client.openConnections == 4)
                await client.retirePools(except: ["sha256:new"])
                try await eventually(within: .seconds(10), "client.openConnections == 2") { client.openConnections == 2 }
                #expect(try await client.send(Harness.request(), credentials: new, environment: .production).status == 200)
                try await client.shutdown()
                try await eventually(within: .seconds(10), "client.openConnections == 0") { client.openConnections == 0 }
                do {
                    _ = try await client.send(Harness.request(), credentials: new, environment: .production)
                    Issue.record("a send after shutdown succeeded")
                } catch {
                    let error = try #require(error as? APNSClientError)
                    #expect(error.code == .shutDown)
                }
            }
        }
    }
}
