import Foundation
import Kafka
import PushEvents
import PushStore
import Synchronization

/// The message records of a chunk, and the read-back that finds which of them a previous
/// planner already published.
extension DeliveryFanOut {
    /// Headers on every message record, so that a reader can filter without parsing values.
    package static let deliveryHeader = "push-delivery-id"
    package static let messageHeader = "push-message-id"

    /// The record of each message to send (failures at planning have none).
    func messageRecords(of fanOut: FanOutContext, _ chunk: Chunk) throws -> [KafkaProducerRecord] {
        let catalog = self.catalog
        let correlationId = fanOut.delivery.requestId
        return try chunk.messages.compactMap { try Self.record(for: $0, catalog: catalog, correlationId: correlationId) }
    }

    /// Resuming a chunk a previous planner left marked: reads the message topics back from the
    /// mark and drops the records the broker already stored, so no device gets two messages.
    func dropAlreadyPublished(_ records: [KafkaProducerRecord], of fanOut: FanOutContext, chunk: Chunk, since pending: PendingChunk) async throws
        -> [KafkaProducerRecord]
    {
        let skip = try await publishedMessageIds(deliveryId: fanOut.deliveryId, since: pending.offsets)
        recovered.increment()
        alreadyPublished.increment(by: skip.count)
        fanOut.logger.notice("Resuming an interrupted chunk", metadata: ["already.published": "\(skip.count)", "chunk.messages": "\(chunk.messages.count)"])
        var records = records
        records.removeAll { record in record.headers.string(Self.messageHeader).flatMap(UUID.init(uuidString:)).map(skip.contains) ?? false }
        return records
    }

    /// Ids of this delivery's messages stored on the message topics since the mark.
    func publishedMessageIds(deliveryId: String, since offsets: [String: [Int32: Int64]]) async throws -> Set<UUID> {
        let found = Mutex<Set<UUID>>([])
        for (topic, start) in offsets {
            try await reader.read(topic: topic, from: start) { records in
                let ids = records.compactMap { record -> UUID? in
                    guard record.headers.string(Self.deliveryHeader) == deliveryId else { return nil }
                    return record.headers.string(Self.messageHeader).flatMap(UUID.init(uuidString:))
                }
                found.withLock { $0.formUnion(ids) }
            }
        }
        return found.withLock { $0 }
    }

    /// A message's record on its platform's topic, keyed by device, with the delivery and
    /// message ids in headers; nil for a failure at planning.
    static func record(for message: PlannedMessage, catalog: TopicCatalog, correlationId: String) throws -> KafkaProducerRecord? {
        var record: KafkaProducerRecord
        let deliveryId: String
        switch message {
        case .apns(let apns):
            deliveryId = apns.deliveryId
            record = try KafkaProducerRecord(
                topic: catalog.apnsMessages.name,
                event: EventEnvelope(
                    key: SubscriptionRegistered.key(appId: apns.appId, registrationToken: apns.registrationToken), payload: apns, correlationId: correlationId
                ))
        case .fcm(let fcm):
            deliveryId = fcm.deliveryId
            record = try KafkaProducerRecord(
                topic: catalog.fcmMessages.name,
                event: EventEnvelope(
                    key: SubscriptionRegistered.key(appId: fcm.appId, registrationToken: fcm.registrationToken), payload: fcm, correlationId: correlationId
                ))
        case .failed:
            return nil
        }
        record.headers.append(KafkaHeader(name: deliveryHeader, string: deliveryId))
        record.headers.append(KafkaHeader(name: messageHeader, string: message.messageId.uuidString.lowercased()))
        return record
    }
}
