import Foundation
import PushWire

/// An OAuth access token for FCM and when to replace it. `description` omits the token itself.
package struct FCMAccessToken: Sendable, Equatable, CustomStringConvertible {
    /// The bearer token (`ya29....`). Never log it.
    package let value: String
    /// `Bearer <value>`, the authorization header every send carries: built once per token
    /// rather than once per request.
    package let authorization: String
    /// When the token endpoint says it stops working (`expires_in` after the request).
    package var expiresAt: Date
    /// When a new token is fetched: `expiresAt - tokenRefreshMargin`, or half the lifetime when
    /// the token lives shorter than twice the margin.
    package var refreshAt: Date

    package init(value: String, expiresAt: Date, refreshAt: Date) {
        self.value = value
        self.authorization = "Bearer " + value
        self.expiresAt = expiresAt
        self.refreshAt = refreshAt
    }

    /// A token fetched at `requestedAt` that lives `expiresIn`.
    package init(value: String, requestedAt: Date, expiresIn: Duration, refreshMargin: Duration) {
        let lifetime = max(0, expiresIn.seconds)
        let margin = max(0, refreshMargin.seconds)
        let usable = lifetime > 2 * margin ? lifetime - margin : lifetime / 2
        self.init(
            value: value,
            expiresAt: requestedAt.addingTimeInterval(lifetime),
            refreshAt: requestedAt.addingTimeInterval(usable)
        )
    }

    package var description: String {
        "FCMAccessToken(expiresAt: \(self.expiresAt), refreshAt: \(self.refreshAt))"
    }
}
