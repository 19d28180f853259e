import Foundation
import Kafka
import PushEvents
import PushTestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an app written from the Campaign samples does with a notification the planner built:
/// read `_mId` and `_dId`, and call the tracking URL as the Android SDK writes it. The real
/// planner (in-process) and the real `tracking-ingestion` executable, on the same topics.
@Suite("The SDK's tracking URL for a planned message lands on its broad log row", .serialized)
struct SDKTrackingIdsTests {
    /// The Android SDK's message id in the tracking URL: `Integer.toHexString(Integer.valueOf(_mId))`
    /// (lowercase hex of the 32-bit two's complement, no leading zeros).
    static func sdkHex(_ mId: String) throws -> String {
        String(UInt32(bitPattern: try #require(Int32(mId), "_mId \(mId) is a Java int")), radix: 16)
    }

    @Test("received and opened hits for every message: each joins its own broad_log row on (delivery_id, broad_log_id); the indicators count them")
    func hitsJoinBroadLog() async throws {
        let suffix = PlanningHarness.makeSuffix()
        try await PlanningHarness.run(suffix: suffix) { h in
            let (service, apps) = try await h.defineService()
            try await h.addSubscriptions(apps[0], count: 6)
            try await h.addSubscriptions(apps[1], count: 6)
            let requestId = "sdk-\(suffix)"
            try await h.publishRequest(requestJSON(requestId: requestId, service: service))
            let deliveryId = try await h.waitPlanned(requestId)
            // Sent, as a sender reports it: each result writes the message's broad log row.
            try await DeliveryIndicatorTests.publish(
                h,
                try await h.plannedMessages(deliveryId).map {
                    try DeliveryIndicatorTests.result(h, MessageSent(message: $0, providerMessageId: "p", attempts: 1, sentAt: Date()), key: $0.messageId)
                })
            try await eventually("12 broad log rows") {
                try await h.int("SELECT count(*)::int FROM push.broad_log WHERE delivery_id = \(deliveryId)") == 12
            }

            // What each device received: its _mId and _dId, and the message the record is.
            var received: [(mId: String, dId: String, messageId: String)] = []
            for record in try await h.messageRecords() {
                let envelope = try #require(try JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any])
                let ids = try DeliveryPlanningTests.payloadIds(of: try #require(envelope["data"] as? [String: Any]))
                received.append((try #require(ids.mId), try #require(ids.dId), try #require(record.headers.string("push-message-id"))))
            }
            #expect(received.count == 12)

            var environment = try PlanningHarness.environment(suffix: suffix)
            let (port, opsPort) = (try EphemeralPort.next(), try EphemeralPort.next())
            environment["TRACKING_LOG_GROUP"] = "test.tracking-log.\(suffix)"
            environment["TRACKING_HOST"] = "127.0.0.1"
            environment["TRACKING_PORT"] = String(port)
            environment["PUSH_OPS_HOST"] = "127.0.0.1"
            environment["PUSH_OPS_PORT"] = String(opsPort)
            environment["LOG_LEVEL"] = "error"
            let tracking = try BuiltExecutable("tracking-ingestion", environment: environment)
            defer { tracking.killIfRunning() }
            try await tracking.waitUntilReady(port: opsPort, within: .seconds(30))

            // Every device reports the notification received; the first four also opened it.
            for (index, device) in received.enumerated() {
                for tag in index < 4 ? [1, 2] : [1] {
                    let url = try #require(URL(string: "http://127.0.0.1:\(port)/r/?id=h\(try Self.sdkHex(device.mId)),\(device.dId),\(tag)"))
                    let (_, response) = try await URLSession.shared.data(from: url)
                    #expect((response as? HTTPURLResponse)?.statusCode == 200, "\(url)")
                }
            }
            try await eventually("16 hits in the tracking log") {
                try await h.int("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(deliveryId)") == 16
            }

            // The analysts' join: an equality on the delivery and the broadLog id.
            let rows = try await h.postgres.query(
                """
                SELECT t.message_id, t.kind, b.message_id
                FROM push.tracking_log t JOIN push.broad_log b ON b.delivery_id = t.delivery_id AND b.broad_log_id = t.broad_log_id
                WHERE t.delivery_id = \(deliveryId)
                """,
                logger: h.logger
            )
            var joined: [String: [String]] = [:]
            for try await (mId, kind, messageId) in rows.decode((String, String, UUID).self) {
                let expected = received.first { $0.mId == mId }?.messageId
                #expect(messageId.uuidString.lowercased() == expected, "the hit for _mId \(mId) joins the message it was sent as")
                joined[mId, default: []].append(kind)
            }
            #expect(joined.count == 12, "every message's hits join its broad log row")
            #expect(joined.values.map { $0.count }.reduce(0, +) == 16)
            try await eventually("the indicators count 12 impressions and 4 opens") {
                try await h.text("SELECT impressions || ' ' || opens FROM push.delivery_indicators WHERE delivery_id = \(deliveryId)") == "12 4"
            }
            await tracking.terminate()
        }
    }
}
