/// Which lane a delivery's messages take (docs/delivery-requests.md, "Priority"): the request's
/// `priority`. Transactional messages (a password reset, an order update) have message and retry
/// topics of their own, which the senders read with their own consumers, budgets and provider
/// connections, and a fan-out loop of their own in the planner: a bulk campaign's backlog never
/// delays them.
package enum DeliveryPriority: String, Codable, Sendable, Hashable, CaseIterable {
    case transactional
    case bulk

    /// A request without `priority` is a bulk delivery: a producer that never heard of lanes
    /// keeps the behaviour it had, and a campaign cannot jump the queue by omission.
    package static let `default` = DeliveryPriority.bulk
}
