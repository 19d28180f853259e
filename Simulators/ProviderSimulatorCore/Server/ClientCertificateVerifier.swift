import Foundation
import Logging
import NIOCore
import NIOSSL
import SwiftASN1
import X509

/// What the TLS handshake learnt about a connection's client certificate.
package enum ClientCertificateCheck: Sendable, Equatable {
    /// The chain leads to a configured CA and is valid now; `names` are what the provider
    /// authorises the certificate for (APNs: its topics).
    case trusted(names: [String])
    /// A certificate was presented but is not acceptable; the connection stays open and the
    /// provider answers its requests with an error (APNs: 403 `BadCertificate`).
    case rejected(Problem)

    package enum Problem: String, Sendable {
        /// Not DER that swift-certificates can read.
        case unreadable
        /// No path to a configured CA (or a policy failure on the path).
        case untrusted
        /// Chains to a configured CA but is outside its validity period.
        case expired
        /// Trusted, but names nothing the provider can authorise.
        case noName
    }
}

/// Optional TLS client-certificate authentication: the server asks every client for a
/// certificate but does not require one (token-auth clients share the port), and checks a
/// presented chain against the configured CAs with swift-certificates' RFC 5280 verifier.
///
/// The handshake succeeds whatever the verdict: the verdict is stored on the connection
/// (`ConnectionState.clientCertificate`), so a bad certificate gets a provider answer a client
/// can classify (APNs 403 `BadCertificate`) instead of a TLS alert it would retry.
package struct ClientCertificateVerifier: Sendable {
    /// The configured CAs, for the verifier and for the CA names the server sends.
    package let trustedCAs: [Certificate]
    /// What a trusted certificate authorises (APNs: the topics read from the subject).
    private let names: @Sendable (Certificate) -> [String]

    /// - Parameters:
    ///   - trustedCAsPEM: PEM texts, each holding one or more CA certificates.
    ///   - names: what a trusted leaf authorises; an empty answer rejects it as `noName`.
    package init(trustedCAsPEM: [String], names: @escaping @Sendable (Certificate) -> [String]) throws {
        var cas: [Certificate] = []
        for pem in trustedCAsPEM {
            let documents = try PEMDocument.parseMultiple(pemString: pem)
            cas += try documents.map { try Certificate(pemDocument: $0) }
        }
        guard !cas.isEmpty else { throw SimulatorConfigurationError("no CA certificate in the client-CA PEM") }
        self.trustedCAs = cas
        self.names = names
    }

    /// The CAs as NIOSSL certificates (trust roots and the CA names of the CertificateRequest).
    func nioTrustRoots() throws -> [NIOSSLCertificate] {
        try self.trustedCAs.map { try NIOSSLCertificate(bytes: $0.serializeAsPEM().derBytes, format: .der) }
    }

    /// Checks a presented chain (leaf first) against the configured CAs, at the current time.
    package func check(_ chain: [NIOSSLCertificate]) async -> ClientCertificateCheck {
        let certificates: [Certificate]
        do {
            certificates = try chain.map { try Certificate(derEncoded: $0.toDERBytes()) }
        } catch {
            return .rejected(.unreadable)
        }
        guard let leaf = certificates.first else { return .rejected(.unreadable) }
        var verifier = Verifier(rootCertificates: CertificateStore(self.trustedCAs)) { RFC5280Policy() }
        let result = await verifier.validate(leaf: leaf, intermediates: CertificateStore(certificates.dropFirst()))
        guard case .validCertificate = result else {
            let now = Date()
            let outOfDate = certificates.contains { now < $0.notValidBefore || now > $0.notValidAfter }
            return .rejected(outOfDate ? .expired : .untrusted)
        }
        let names = self.names(leaf)
        return names.isEmpty ? .rejected(.noName) : .trusted(names: names)
    }

    /// The NIOSSL callback for one connection: verifies off the event loop (swift-certificates'
    /// verifier is async; NIOSSL hands over a promise for exactly this), stores the verdict on the
    /// connection, then lets the handshake finish. Requests cannot arrive before it has finished.
    /// A rejection is logged at debug level with its problem (untrusted, expired, ...).
    func verificationCallback(for connection: ConnectionState, logger: Logger) -> NIOSSLCustomVerificationCallback {
        { chain, handshake in
            let checked = connection.channel.eventLoop.makePromise(of: ClientCertificateCheck.self)
            checked.completeWithTask { await self.check(chain) }
            checked.futureResult.whenSuccess { verdict in
                if case .rejected(let problem) = verdict {
                    logger.debug("client certificate rejected", metadata: ["problem": "\(problem.rawValue)"])
                }
                connection.clientCertificate = verdict
                handshake.succeed(.certificateVerified)
            }
        }
    }
}
