import Foundation
import Kafka

/// A `MessageSent` / `MessageFailed` / `MessageExpired` record, as a test reads it.
struct ResultEvent: Sendable {
    var messageId: String
    var type: String
    var failureType: String?
    var reason: String?
    var attempts: Int?
    var providerMessageId: String?

    init?(_ record: KafkaConsumerRecord) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(record.value)) as? [String: Any],
            let type = object["type"] as? String, let data = object["data"] as? [String: Any],
            let id = (data["message"] as? [String: Any])?["messageId"] as? String
        else { return nil }
        messageId = id.lowercased()
        self.type = type
        failureType = data["failureType"] as? String
        reason = data["reason"] as? String
        attempts = data["attempts"] as? Int
        providerMessageId = data["providerMessageId"] as? String
    }
}

extension [ResultEvent] {
    /// The first result of each message, by lowercased message id.
    var byMessageId: [String: ResultEvent] {
        Dictionary(map { ($0.messageId, $0) }) { first, _ in first }
    }
}
