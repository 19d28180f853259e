import Foundation
import PushEvents
import PushPlanning
import Testing

/// Messages exactly as the delivery planner builds them (`MessageFactory`, the fan-out's
/// builder), for sending through the real senders to the simulators' strict referees.
enum PlannerBuiltMessages {
    static func message(app: PlanningApp, token: String, content: DeliveryRequest.Content, broadLogId: Int32) throws -> PlannedMessage {
        let now = Date()
        let delivery = DeliveryAccepted(
            deliveryId: "4127", requestId: "planner-built-\(UUID())", serviceId: UUID(), serviceName: "s", apps: [app.reference], audience: .everyone,
            content: content, validUntil: now.addingTimeInterval(3600), sendAt: now, throttlePerSecond: nil, acceptedAt: now)
        let factory = try MessageFactory(delivery: delivery, apps: [app])
        let device = TargetedSubscription(appId: app.appId, registrationToken: token, userKey: "u", params: [:])
        return try #require(factory.message(for: device, messageId: factory.messageId(for: device), broadLogId: broadLogId, plannedAt: now))
    }
}
