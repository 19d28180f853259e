import Hummingbird
import NIOCore

/// A request context that keeps the connection's peer address: what the HTTP servers that
/// count requests per client (registration's rate limits, the console's sign-in limit) need.
package struct PeerRequestContext: RequestContext, RemoteAddressRequestContext {
    package var coreContext: CoreRequestContextStorage
    package let remoteAddress: SocketAddress?

    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
