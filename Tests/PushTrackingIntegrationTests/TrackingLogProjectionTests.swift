import Foundation
import Kafka
import PostgresNIO
import PushEvents
import PushTestSupport
import PushTracking
import Testing

@Suite("tracking_log projection against the real broker and PostgreSQL", .serialized)
struct TrackingLogProjectionTests {
    static func hit(message: String, form: String = "uuid", delivery: String, tag: Int32, at date: Date = Date()) -> TrackingHitRecorded {
        TrackingHitRecorded(
            trackingId: UUID(), messageId: message, messageIdForm: form, deliveryId: delivery, tagId: tag,
            kind: TrackingKind(tagID: tag).rawValue, occurredAt: date
        )
    }

    @Test("hits through the endpoint end as one row each; duplicate hits stay rows; a replay adds nothing")
    func rowsExactlyOnce() async throws {
        let suffix = TrackingHarness.uniqueSuffix()
        let messages = (0..<10).map { _ in UUID().uuidString }  // upper case, as some SDKs send
        let (delivery, expected) = try await TrackingHarness.run(suffix: suffix) { harness in
            let delivery = try await harness.issueDeliveryId()
            var accepted = 0
            for message in messages {
                for tag in [1, 2] {
                    #expect(try await harness.get("id=h\(message),\(delivery),\(tag)").status == 200)
                    accepted += 1
                }
            }
            // The same device reporting the first five impressions again, a decimal id, a tag 3.
            for message in messages.prefix(5) {
                #expect(try await harness.get("id=h\(message),\(delivery),1").status == 200)
                accepted += 1
            }
            #expect(try await harness.get("id=hd7e15e5c,\(delivery),1").status == 200)
            #expect(try await harness.get("id=h3039,\(delivery),3").status == 200)
            accepted += 2

            try await eventually("every accepted hit is a row") {
                try await harness.rows(deliveryId: delivery).count >= accepted
            }
            try await Task.sleep(for: .seconds(1))
            let rows = try await harness.rows(deliveryId: delivery)
            #expect(rows.count == accepted, "one row per accepted hit")
            #expect(Set(rows.map(\.trackingId)).count == accepted)
            let uuidMessages = Set(messages.map { $0.lowercased() })
            #expect(Set(rows.filter { $0.kind == "received" && $0.messageIdForm == "uuid" }.map(\.messageId)) == uuidMessages)
            #expect(rows.filter { $0.kind == "received" && $0.messageIdForm == "uuid" }.count == 15)
            #expect(rows.filter { $0.kind == "opened" }.count == 10)
            #expect(rows.contains { $0.messageId == "-673096100" && $0.messageIdForm == "decimal" && $0.tagId == 1 && $0.kind == "received" })
            #expect(rows.contains { $0.messageId == "12345" && $0.tagId == 3 && $0.kind == "other" })

            // What the indicators will compute: distinct messages received / opened per delivery.
            let distinct = try await harness.postgres.query(
                """
                SELECT count(DISTINCT message_id) FILTER (WHERE kind = 'received')::int,
                       count(DISTINCT message_id) FILTER (WHERE kind = 'opened')::int
                FROM push.tracking_log WHERE delivery_id = \(delivery)
                """,
                logger: harness.logger
            )
            for try await (received, opened) in distinct.decode((Int, Int).self) {
                #expect(received == 11)
                #expect(opened == 10)
            }
            return (delivery, rows)
        }

        // Throw the projection's positions away (not its rows) and start again: every record is
        // read again, and the tracking_id key keeps the table as it was.
        try await TrackingHarness.withPostgres { postgres in
            try await postgres.query("DELETE FROM push.consumer_offsets WHERE group_id = \("test.tracking-log.\(suffix)")")
        }
        try await TrackingHarness.run(suffix: suffix) { harness in
            try await eventually("the replay reached the end of the topic") {
                let stored = try await harness.count(
                    "SELECT coalesce(sum(next_offset), 0)::int FROM push.consumer_offsets WHERE group_id = \(harness.settings.projectionName)"
                )
                return stored == expected.count
            }
            let rows = try await harness.rows(deliveryId: delivery)
            #expect(rows == expected, "the replay added and changed nothing")
        }
    }

    @Test("a malformed record goes to push.tracking.dlq with its reason; the next one is still projected")
    func deadLetters() async throws {
        let suffix = TrackingHarness.uniqueSuffix()
        let delivery = "dlq-\(suffix)"
        try await TrackingHarness.run(suffix: suffix, partitions: 1) { harness in
            let before = Self.hit(message: UUID().uuidString.lowercased(), delivery: delivery, tag: 1)
            let after = Self.hit(message: UUID().uuidString.lowercased(), delivery: delivery, tag: 2)
            var bogus = Self.hit(message: "55336", form: "decimal", delivery: delivery, tag: 1)
            bogus.kind = "clicked"
            try await harness.publish([before])
            try await harness.publish([
                (key: "bad", value: Array(#"{"type": "TrackingHitRecorded"}"#.utf8)),
                (key: "55336", value: try EventEnvelope(key: "55336", payload: bogus).encoded()),
            ])
            try await harness.publish([after])

            try await eventually("the hits around the bad records are projected") {
                try await harness.rows(deliveryId: delivery).count == 2
            }
            let rows = try await harness.rows(deliveryId: delivery)
            #expect(Set(rows.map(\.trackingId)) == [before.trackingId, after.trackingId])

            let letters = try await harness.read(harness.deadLetterTopic) { $0.count >= 2 }
            #expect(letters.count == 2)
            #expect(letters.map(\.keyString) == ["bad", "55336"])
            #expect(letters.allSatisfy { $0.headers.string("dlq.source.topic") == harness.topic })
            #expect(letters.allSatisfy { $0.headers.string("dlq.consumer.group") == harness.settings.projectionName })
            #expect(letters.map { $0.headers.string("dlq.source.offset") } == ["1", "2"])
            #expect(
                letters.first?.headers.string("dlq.reason")?.hasPrefix("malformed_envelope") == true, "\(letters.first?.headers.string("dlq.reason") ?? "")")
            #expect(letters.last?.headers.string("dlq.reason") == "invalid_payload: TrackingHitRecorded v1: kind must be received, opened or other")
        }
    }

    @Test(
        "a record PostgreSQL refuses (a NUL in a text) goes to the dead-letter topic with PostgreSQL's reason; its batch neighbours are projected, the projection goes on"
    )
    func refusedByPostgres() async throws {
        let suffix = TrackingHarness.uniqueSuffix()
        let delivery = "refused-\(suffix)"
        try await TrackingHarness.run(suffix: suffix, partitions: 1) { harness in
            let hits = (0..<6).map { n in Self.hit(message: UUID().uuidString.lowercased(), delivery: delivery, tag: Int32(n % 2 + 1)) }
            let poison = Self.hit(message: UUID().uuidString.lowercased(), delivery: delivery + "\u{0}x", tag: 1)
            // One publish: the poison record sits in the middle of the others' batch.
            try await harness.publish(Array(hits[0..<3]) + [poison] + Array(hits[3..<5]))
            try await harness.publish([hits[5]])
            try await eventually("every other hit is projected") {
                try await harness.rows(deliveryId: delivery).count == 6
            }
            #expect(Set(try await harness.rows(deliveryId: delivery).map(\.trackingId)) == Set(hits.map(\.trackingId)))

            let letters = try await harness.read(harness.deadLetterTopic) { $0.count >= 1 }
            #expect(letters.count == 1)
            let reason = letters.first?.headers.string("dlq.reason") ?? ""
            #expect(reason.hasPrefix("PostgreSQL refused the record:") && reason.contains("SQLSTATE 22"), "\(reason)")
            #expect(letters.first?.headers.string("dlq.source.offset") == "3")
        }
    }

    @Test("stopped mid-stream and restarted: every hit is one row, no gaps, no doubles")
    func restart() async throws {
        let suffix = TrackingHarness.uniqueSuffix()
        let delivery = "restart-\(suffix)"
        let total = 6_000
        let hits = (0..<total).map { index in
            Self.hit(message: String(index % 700), form: "decimal", delivery: delivery, tag: Int32(index % 2 + 1))
        }
        let atStop = try await TrackingHarness.run(suffix: suffix, partitions: 3) { harness in
            try await harness.publish(hits)
            try await eventually("the projection has started") {
                try await harness.count("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(delivery)") > 0
            }
            return try await harness.count("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(delivery)")
        }
        #expect(atStop < total, "stopped before the end (else this test proves less): \(atStop)")
        try await TrackingHarness.run(suffix: suffix, partitions: 3) { harness in
            try await eventually("all hits projected after the restart") {
                try await harness.count("SELECT count(*)::int FROM push.tracking_log WHERE delivery_id = \(delivery)") >= total
            }
            try await Task.sleep(for: .seconds(1))
            let counts = try await harness.postgres.query(
                """
                SELECT count(*)::int, count(DISTINCT tracking_id)::int, count(DISTINCT (kafka_partition, kafka_offset))::int
                FROM push.tracking_log WHERE delivery_id = \(delivery)
                """,
                logger: harness.logger
            )
            for try await (rows, ids, positions) in counts.decode((Int, Int, Int).self) {
                #expect(rows == total)
                #expect(ids == total)
                #expect(positions == total, "every record of the topic once")
            }
            let offsets = try await harness.count(
                "SELECT coalesce(sum(next_offset), 0)::int FROM push.consumer_offsets WHERE group_id = \(harness.settings.projectionName)"
            )
            #expect(offsets == total)
            #expect(Set(try await harness.rows(deliveryId: delivery).map(\.trackingId)) == Set(hits.map(\.trackingId)))
        }
    }
}
