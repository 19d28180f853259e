import Crypto
import Foundation
import Kafka
import PushCredentials
import PushEvents
import PushPlanning
import PushSending
import PushStore

/// One iOS notification as the e2e benchmark's delivery makes it (a title, a body with two
/// personal variables, a badge and a sound; the device's data key), and what each hot path does
/// with it: the planner builds and seals the message and writes its record; the sender reads
/// the record, opens the box and writes the result.
struct Fixture {
    let plannedAt = Date(timeIntervalSince1970: 1_800_000_000)
    let key = (0..<32).map { UInt8($0 &* 7 &+ 3) }
    let subjectId = UUID(uuidString: "0F0E0D0C-0B0A-4908-8706-050403020100")!
    let messageId = UUID(uuidString: "A1B2C3D4-0000-4000-8000-00000000BEEF")!
    let factory: MessageFactory
    let subscription: TargetedSubscription

    init() throws {
        let app = PlanningApp(
            appId: UUID(uuidString: "5C1B0F8E-0000-4000-8000-000000000001")!, integrationKey: "ios-key", platform: .ios, environment: "production",
            bundleId: "com.example.trips", fcmProjectId: nil, variables: ["firstName", "points"],
            credential: CredentialReference(
                credentialId: UUID(uuidString: "C0C0C0C0-0000-4000-8000-000000000001")!, kind: "apns-token", fingerprint: "sha256:ab"))
        let delivery = DeliveryAccepted(
            deliveryId: "2026", requestId: "micro", serviceId: UUID(uuidString: "5E5E5E5E-0000-4000-8000-000000000001")!, serviceName: "neotrips",
            apps: [app.reference], audience: .everyone,
            content: .init(
                title: "Lisbon is waiting", body: "Hello {{param.firstName|traveller}}, you have {{param.points}} points", variables: [:],
                ios: .init(badge: 1, sound: .named("default"), threadId: "trips")),
            validUntil: plannedAt.addingTimeInterval(86_400), sendAt: plannedAt, throttlePerSecond: nil, acceptedAt: plannedAt)
        factory = try MessageFactory(delivery: delivery, apps: [app])
        subscription = TargetedSubscription(
            appId: app.appId, registrationToken: String(repeating: "a1b2c3d4", count: 8), userKey: "traveller-000042@example.com",
            params: ["firstName": "Ana", "points": "3666"],
            subjectKey: .init(id: subjectId, key: key))
    }

    func planned() throws -> APNSMessagePlanned {
        guard case .apns(let message) = factory.message(for: subscription, messageId: messageId, broadLogId: 42, plannedAt: plannedAt) else {
            throw Usage("the fixture's delivery did not plan an APNs message")
        }
        return message
    }

    func cases() throws -> [MicroBenchCommand.Case] {
        let message = try planned()
        let sealed = try message.sealed(subjectId: subjectId, key: key)
        let envelope = EventEnvelope(key: sealed.recordKey, payload: sealed, correlationId: sealed.deliveryId)
        let record = try KafkaProducerRecord(topic: "push.apns.messages", event: envelope).value
        guard case .known(let read, let metadata) = try APNSMessagePlanned.decodeRecord(record), let opened = read.opened(with: key) else {
            throw Usage("the fixture's record does not read back")
        }
        let plain = [UInt8](repeating: 0x61, count: 5 + message.registrationToken.utf8.count + message.content.utf8.count)
        let symmetric = SymmetricKey(data: key)
        let json = try JSONSerialization.jsonObject(with: Data(record))
        // The data key as migration 43 stores it, wrapped under a key-encryption key.
        let ring = try CredentialCipher(keyBase64: Data((0..<32).map { UInt8(($0 * 5 + 9) % 256) }).base64EncodedString(), setting: "micro-bench")
        let wrapped = try ring.wrap(key, subjectId: subjectId)
        let ringKey = SymmetricKey(data: (0..<32).map { UInt8(($0 * 5 + 9) % 256) })
        return [
            MicroBenchCommand.Case(
                name: "plan.message", what: "the planner: personalize and build one APNs payload (MessageFactory.message)",
                run: { _ = factory.message(for: subscription, messageId: messageId, broadLogId: 42, plannedAt: plannedAt) }),
            MicroBenchCommand.Case(
                name: "seal", what: "the planner: seal token and payload under the person's data key (AES-GCM, digest, base64)",
                reference: "AES-GCM of the same bytes",
                run: { _ = try message.sealed(subjectId: subjectId, key: key) },
                runReference: { _ = try AES.GCM.seal(plain, using: symmetric).combined }),
            MicroBenchCommand.Case(
                name: "record.write", what: "the planner: the sealed message's record (envelope and payload as JSON)",
                reference: "JSONSerialization.data, same",
                run: { _ = try KafkaProducerRecord(topic: "push.apns.messages", event: envelope) },
                runReference: { _ = try JSONSerialization.data(withJSONObject: json) }),
            MicroBenchCommand.Case(
                name: "record.read", what: "the sender: read a message record (APNSMessagePlanned.decodeRecord)",
                reference: "JSONSerialization.jsonObject",
                run: { _ = try APNSMessagePlanned.decodeRecord(record) },
                runReference: { _ = try JSONSerialization.jsonObject(with: Data(record)) }),
            MicroBenchCommand.Case(
                name: "key.unwrap", what: "the planner and the senders: a data key wrapped under PUSH_DATA_KEYS_KEY opened (once per row read)",
                reference: "AES-GCM open of 32 bytes",
                run: { _ = try SubjectKeys.opened(wrapped.bytes, keyId: wrapped.keyId, subjectId: subjectId, wrapping: ring) },
                runReference: {
                    _ = try AES.GCM.open(
                        AES.GCM.SealedBox(combined: Data(wrapped.bytes)), using: ringKey,
                        authenticating: Data("push-data-key:\(subjectId.uuidString.lowercased())".utf8))
                }),
            MicroBenchCommand.Case(
                name: "open", what: "the sender: open the box (base64, AES-GCM, the token's digest checked)",
                run: { _ = read.opened(with: key) }),
            MicroBenchCommand.Case(
                name: "result.write", what: "the sender: the MessageSent record of an answer",
                run: {
                    let sent = MessageSent(message: opened.reference, providerMessageId: "9F3B", attempts: 1, sentAt: plannedAt)
                    let envelope = EventEnvelope(
                        key: opened.messageId.lowercaseText, payload: sent, correlationId: opened.deliveryId, causationId: metadata.id.lowercaseText)
                    _ = try KafkaProducerRecord(topic: "push.message-results", event: envelope)
                }),
        ]
    }
}
