/// Why a tracking URL's `id` was refused. `reason` is one line a person understands (it is the
/// 400 answer's body); `code` is a short, bounded label for metrics and logs.
package struct TrackingURLError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong, as an open set of codes (new codes may be added).
    package struct Code: Sendable, Hashable, CustomStringConvertible {
        package let label: String
        init(_ label: String) { self.label = label }

        /// No `id` parameter in the query string.
        package static let missingID = Code("missing_id")
        /// Not three comma-separated parts, or not percent-decodable.
        package static let malformedID = Code("malformed_id")
        /// The first character is not an ASCII letter.
        package static let contentLetter = Code("content_letter")
        /// The message id is neither a UUID nor a hex broadLog id.
        package static let messageID = Code("message_id")
        /// The delivery id is empty, too long or holds control characters.
        package static let deliveryID = Code("delivery_id")
        /// The tag id is not a 32-bit integer.
        package static let tagID = Code("tag_id")

        package var description: String { label }
    }

    package var code: Code
    package var reason: String

    package init(_ code: Code, _ reason: String) {
        self.code = code
        self.reason = reason
    }

    package var description: String { reason }
}
