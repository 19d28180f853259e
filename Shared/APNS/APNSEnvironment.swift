/// Which APNs service a pool talks to. Device tokens are bound to one of them: a sandbox token
/// sent to production answers `BadDeviceToken`.
package enum APNSEnvironment: String, Sendable, Hashable {
    case production
    case sandbox
}
