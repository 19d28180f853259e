/// The HTTP header names the project sends and reads (APNs, FCM HTTP v1 and its token endpoint,
/// the HTTP/2 client under them), spelled once: the clients send and read them, the simulators
/// check and answer them. Lower case, as HTTP/2 requires (RFC 9113 section 8.2.1).
package enum HTTPHeaderName {
    /// The credential: `bearer <provider token>` (APNs), `Bearer <access token>` (FCM).
    package static let authorization = "authorization"
    package static let contentType = "content-type"
    /// Sent by the HTTP/2 client with every request body, and by the simulators.
    package static let contentLength = "content-length"
    /// Seconds or an HTTP date (FCM on 429 and 5xx; APNs with some 429s).
    package static let retryAfter = "retry-after"

    /// The notification's id, sent lower case; APNs echoes it (or its own) in the answer.
    package static let apnsID = "apns-id"
    package static let apnsTopic = "apns-topic"
    package static let apnsPushType = "apns-push-type"
    package static let apnsPriority = "apns-priority"
    /// Epoch seconds; absent means APNs's default storage.
    package static let apnsExpiration = "apns-expiration"
    package static let apnsCollapseID = "apns-collapse-id"
}
