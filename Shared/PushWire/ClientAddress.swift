import Foundation

/// The client a request is counted against (rate limits, sign-in attempts).
package enum ClientAddress {
    /// The socket's peer, or, when the peer is a trusted proxy, the last address of
    /// `X-Forwarded-For` (all its lines, in order) that is not itself a trusted proxy: each proxy
    /// appends the address it got the request from, so the addresses left of the last untrusted
    /// one were written by the client and prove nothing.
    package static func resolve(peer: String, forwardedFor: [String], trusted: Set<String>) -> String {
        guard trusted.contains(peer) else { return peer }
        let hops = forwardedFor.flatMap { $0.split(separator: ",") }.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        return hops.last { !trusted.contains($0) } ?? hops.first ?? peer
    }
}
