/// Why a delivery request was not accepted: a sentence for the person who wrote the request.
package struct DeliveryRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request's id when it could be read.
    package var requestId: String?
    package var reason: String

    package init(requestId: String?, reason: String) {
        self.requestId = requestId
        self.reason = reason
    }

    package var description: String { reason }
}
