import Foundation
import Kafka
import PushEvents
import PushStore
import PushWire
import Synchronization

/// The message records of a chunk, and the read-back that finds which of them a previous
/// planner already published.
extension DeliveryFanOut {
    /// Headers on every message record, so that a reader can filter without parsing values.
    package static let deliveryHeader = "push-delivery-id"
    package static let messageHeader = "push-message-id"
    /// The message's broadLog id (`_mId`), decimal.
    package static let broadLogHeader = "push-broad-log-id"

    /// The record of each message to send (failures at planning have none).
    func messageRecords(of fanOut: FanOutContext, _ chunk: Chunk) throws -> [KafkaProducerRecord] {
        let catalog = self.catalog
        let correlationId = fanOut.delivery.requestId
        let lane = fanOut.delivery.lane
        return try chunk.messages.compactMap { try Self.record(for: $0, catalog: catalog, lane: lane, correlationId: correlationId) }
    }

    /// This delivery's messages the broker stored on the message topics since a chunk's mark: a
    /// planner resuming the chunk publishes only the others, and hands out no id these carry.
    struct StoredMessages {
        var messageIds: Set<UUID> = []
        /// The broadLog id of each stored message that has one.
        var broadLogIds: [UUID: Int32] = [:]

        func contains(_ record: KafkaProducerRecord) -> Bool {
            record.headers.string(DeliveryFanOut.messageHeader).flatMap(UUID.init(uuidString:)).map(messageIds.contains) ?? false
        }
    }

    /// Reads the message topics back from the mark of the chunk a previous planner left pending.
    func readBack(of fanOut: FanOutContext, since pending: PendingChunk) async throws -> StoredMessages {
        let deliveryId = fanOut.deliveryId
        let found = Mutex(StoredMessages())
        for (topic, start) in pending.offsets {
            try await reader.read(topic: topic, from: start) { records in
                for record in records where record.headers.string(Self.deliveryHeader) == deliveryId {
                    guard let messageId = record.headers.string(Self.messageHeader).flatMap(UUID.init(uuidString:)) else { continue }
                    let broadLogId = record.headers.string(Self.broadLogHeader).flatMap { Int32($0) }
                    found.withLock {
                        $0.messageIds.insert(messageId)
                        if let broadLogId { $0.broadLogIds[messageId] = broadLogId }
                    }
                }
            }
        }
        // What of it is the chunk's (other shards of the delivery publish meanwhile) is counted
        // by the caller, once the chunk is rebuilt.
        return found.withLock { $0 }
    }

    /// A message's record on its platform's topic of the delivery's lane, keyed by device
    /// (`<appId>:<tokenDigest>`: the token is only inside the sealed box), with
    /// the delivery and message ids in headers; nil for a failure at planning.
    static func record(for message: PlannedMessage, catalog: TopicCatalog, lane: DeliveryPriority, correlationId: String) throws -> KafkaProducerRecord? {
        var record: KafkaProducerRecord
        let deliveryId: String
        switch message {
        case .apns(let apns):
            deliveryId = apns.deliveryId
            record = try KafkaProducerRecord(
                topic: catalog.messages(.ios, lane: lane).name,
                event: EventEnvelope(
                    key: TokenDigest.subscriptionKey(appId: apns.appId, tokenDigest: apns.tokenDigest), payload: apns, correlationId: correlationId
                ))
        case .fcm(let fcm):
            deliveryId = fcm.deliveryId
            record = try KafkaProducerRecord(
                topic: catalog.messages(.android, lane: lane).name,
                event: EventEnvelope(
                    key: TokenDigest.subscriptionKey(appId: fcm.appId, tokenDigest: fcm.tokenDigest), payload: fcm, correlationId: correlationId
                ))
        case .failed:
            return nil
        }
        record.headers.append(KafkaHeader(name: deliveryHeader, string: deliveryId))
        record.headers.append(KafkaHeader(name: messageHeader, string: message.messageId.lowercaseText))
        if let broadLogId = message.broadLogId { record.headers.append(KafkaHeader(name: broadLogHeader, string: String(broadLogId))) }
        return record
    }
}
