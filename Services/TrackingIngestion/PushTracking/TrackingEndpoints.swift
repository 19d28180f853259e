import Foundation
import Hummingbird
import Kafka
import Logging
import Metrics
import NIOCore
import PushEvents
import PushStore

/// `GET /r/?id=<letter><messageId>,<deliveryId>,<tagId>`, exactly as the Campaign SDKs call it
/// (docs/tracking.md). A hit is answered 200 only once its `TrackingHitRecorded` event is stored
/// by the broker; a malformed id is a 400 with a one-line reason and writes nothing; a hit for a
/// delivery the channel never issued is answered 200, as the SDK expects, and not stored; a
/// broker that cannot confirm within the store timeout is a 503. Tracking URLs are unsigned: nothing
/// but the `id` is read, and nothing about the caller is kept.
package struct TrackingEndpoints: Sendable {
    let producer: KafkaProducer
    let topic: String
    let issued: IssuedDeliveries
    let logger: Logger
    /// `push_tracking_hits_total` of the hot paths, made once (a lookup per request costs a lock).
    let stored: [TrackingKind: Counter]
    let notStored: [TrackingKind: Counter]
    let neverIssued: [TrackingKind: Counter]

    package init(producer: KafkaProducer, topic: String, issued: IssuedDeliveries, logger: Logger) {
        self.producer = producer
        self.topic = topic
        self.issued = issued
        self.logger = logger
        func counters(status: String, reason: String) -> [TrackingKind: Counter] {
            Dictionary(
                uniqueKeysWithValues: TrackingKind.allCases.map { kind in
                    (kind, Counter(label: "push_tracking_hits_total", dimensions: [("kind", kind.rawValue), ("status", status), ("reason", reason)]))
                })
        }
        stored = counters(status: "200", reason: "none")
        notStored = counters(status: "503", reason: "not_stored")
        neverIssued = counters(status: "200", reason: "unknown_delivery")
    }

    /// Routes `/r/` (and `/r`: the router ignores a trailing slash).
    package func addRoutes<Context: RequestContext>(to router: Router<Context>) {
        router.get("/r/") { request, _ in
            await track(query: request.uri.query ?? "")
        }
    }

    /// The answer to one hit, given its raw query string.
    func track(query: String) async -> Response {
        let url: TrackingURL
        do {
            url = try TrackingURL(query: query)
        } catch {
            Counter(label: "push_tracking_hits_total", dimensions: [("kind", "none"), ("status", "400"), ("reason", error.code.label)]).increment()
            logger.debug("Tracking hit refused", metadata: ["reason": "\(error.code)"])
            return Self.text(.badRequest, error.reason)
        }
        let kind = url.kind
        if await issued.check(url.deliveryID) == .neverIssued {
            neverIssued[kind]?.increment()
            logger.debug("Tracking hit for a delivery never issued, not stored", metadata: ["delivery.id": "\(url.deliveryID.prefix(40))"])
            return Self.text(.ok, "OK")
        }
        let hit = Self.event(for: url, trackingId: UUID(), at: Date())
        let envelope = EventEnvelope(key: hit.messageId, payload: hit, id: hit.trackingId, occurredAt: hit.occurredAt)
        do {
            try await producer.send(KafkaProducerRecord(topic: topic, event: envelope))
        } catch {
            notStored[kind]?.increment()
            logger.warning("Tracking hit not stored by the broker", metadata: ["error": "\(error)"])
            return Self.text(.serviceUnavailable, "the tracking hit could not be stored in time; retry later")
        }
        stored[kind]?.increment()
        return Self.text(.ok, "OK")
    }

    /// The event a parsed hit becomes.
    package static func event(for url: TrackingURL, trackingId: UUID, at date: Date) -> TrackingHitRecorded {
        TrackingHitRecorded(
            trackingId: trackingId, messageId: url.messageID.normalized, messageIdForm: url.messageID.form.rawValue,
            deliveryId: url.deliveryID, tagId: url.tagID, kind: url.kind.rawValue, occurredAt: date
        )
    }

    static func text(_ status: HTTPResponse.Status, _ line: String) -> Response {
        Response(
            status: status,
            headers: [.contentType: "text/plain; charset=utf-8", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(string: line + "\n"))
        )
    }
}
