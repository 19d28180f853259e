import Foundation
import Kafka
import Logging
import Metrics
import NIOCore
import PostgresNIO
import PushEvents
import PushRuntime
import PushStore
import ServiceLifecycle

/// The planner's transactional outbox: events decided inside a PostgreSQL transaction (a
/// request accepted, a chunk's exclusions, a delivery planned) are written to
/// `push.planner_outbox` in that transaction and published to Kafka afterwards by
/// `PlannerOutboxPublisher`. Nothing decided is lost; an event may be published twice after a
/// crash, which every consumer tolerates (they deduplicate on the event's natural key).
package enum PlannerOutbox {
    struct StoredHeader: Codable {
        var name: String
        /// Base64 of the header bytes (nil for a null header).
        var value: String?
    }

    /// Adds records to the outbox inside the caller's transaction.
    package static func insert(_ records: [KafkaProducerRecord], on connection: PostgresConnection, logger: Logger) async throws {
        guard !records.isEmpty else { return }
        let encoder = JSONEncoder()
        let topics = records.map(\.topic)
        let keys = records.map { $0.key.map { Data($0).base64EncodedString() } ?? "" }
        let hasKeys = records.map { $0.key != nil }
        let values = records.map { Data($0.value).base64EncodedString() }
        let headers = try records.map { record in
            String(
                decoding: try encoder.encode(record.headers.map { StoredHeader(name: $0.name, value: $0.value.map { Data($0).base64EncodedString() }) }),
                as: UTF8.self)
        }
        try await connection.query(
            """
            INSERT INTO push.planner_outbox (topic, key, value, headers)
            SELECT t, CASE WHEN hk THEN decode(k, 'base64') END, decode(v, 'base64'), h::jsonb
            FROM unnest(\(topics)::text[], \(keys)::text[], \(hasKeys)::bool[], \(values)::text[], \(headers)::text[]) WITH ORDINALITY AS x(t, k, hk, v, h, n)
            ORDER BY n
            """,
            logger: logger
        )
    }

    /// The record of an event, as `KafkaProducerRecord(topic:event:)` makes it.
    package static func record<Payload: PushEvent>(topic: String, key: String, payload: Payload, correlationId: String?) throws -> KafkaProducerRecord {
        try KafkaProducerRecord(topic: topic, event: EventEnvelope(key: key, payload: payload, correlationId: correlationId))
    }
}

/// Publishes the committed rows of the outbox in `seq` order and deletes exactly the rows the
/// broker stored. It publishes only rows bound for its topic catalog's topics, and one instance
/// per catalog publishes at a time (a transaction-scoped advisory lock on the catalog): planners
/// of other deployments (or of other tests) sharing the database neither publish its rows nor
/// hold them up, and a row its broker keeps refusing holds up its own catalog's rows only. Rows
/// of concurrent transactions may commit out of `seq` order; a row committed after a batch of
/// higher ones was read goes out in the next batch. The events of one key keep their order:
/// they are written by transactions that follow one another (a delivery is accepted, then
/// planned) or by one transaction.
///
/// It does not poll the table: the outbox is written by this same process (the intake and the
/// fan-out), which raises `outboxWritten` after each transaction that wrote to it committed,
/// and the publisher waits for that signal once the outbox is empty. `backstop` bounds the
/// wait only for rows no signal of this process announces: rows another instance or a previous
/// process left (a process that starts publishes what it finds before its first wait).
package final class PlannerOutboxPublisher: Service {
    private let postgres: PostgresClient
    private let producer: KafkaProducer
    /// The catalog's topics: the rows this publisher publishes.
    private let topics: [String]
    /// What names the catalog in the advisory lock: its delivery events topic.
    private let scope: String
    private let outboxWritten: Wakeup
    private let backstop: Duration
    private let busyRetry: Duration
    private let logger: Logger
    private let published = Counter(label: "push_planner_outbox_published_total")

    /// `busyRetry`: how soon to try again while another instance holds the outbox (it publishes
    /// meanwhile; the rows this instance wrote may be behind its batch).
    package init(
        postgres: PostgresClient, producer: KafkaProducer, catalog: TopicCatalog, outboxWritten: Wakeup, backstop: Duration = .seconds(5),
        busyRetry: Duration = .milliseconds(100), logger: Logger
    ) {
        self.postgres = postgres
        self.producer = producer
        self.topics = catalog.all.map(\.name)
        self.scope = catalog.deliveryEvents.name
        self.outboxWritten = outboxWritten
        self.backstop = backstop
        self.busyRetry = busyRetry
        self.logger = logger
    }

    package func run() async throws {
        var delay = Duration.milliseconds(200)
        while !Task.isCancelled, !Task.isShuttingDownGracefully {
            do {
                let count = try await publishBatch()
                delay = .milliseconds(200)
                switch count {
                case nil: try await Task.sleep(for: busyRetry)
                case 0: await outboxWritten.wait(atMost: backstop, orGracefulShutdown: true)
                default: continue
                }
            } catch {
                if Task.isCancelled || Task.isShuttingDownGracefully { break }
                logger.warning("Publishing the planner outbox failed; retrying", metadata: ["error": "\(String(reflecting: error))", "retry.in": "\(delay)"])
                try? await Task.sleep(for: delay)
                delay = min(delay * 2, .seconds(5))
            }
        }
    }

    /// Publishes up to 500 of the catalog's records; returns how many, or nil when another
    /// instance holds the catalog's outbox.
    func publishBatch() async throws -> Int? {
        let producer = self.producer
        let logger = self.logger
        let (topics, scope) = (self.topics, self.scope)
        let count = try await postgres.withTransaction(logger: logger) { connection -> Int? in
            let locked = try await connection.query(
                "SELECT pg_try_advisory_xact_lock(hashtext('push-planner-outbox'), hashtext(\(scope)))", logger: logger)
            var got = false
            for try await value in locked.decode(Bool.self) { got = value }
            guard got else { return nil }
            let rows = try await connection.query(
                "SELECT seq, topic, key, value, headers::text FROM push.planner_outbox WHERE topic = ANY(\(topics)) ORDER BY seq LIMIT 500",
                logger: logger
            )
            var records: [KafkaProducerRecord] = []
            var sent: [Int64] = []
            let decoder = JSONDecoder()
            for try await (seq, topic, key, value, headers) in rows.decode((Int64, String, ByteBuffer?, ByteBuffer, String).self) {
                let stored = (try? decoder.decode([PlannerOutbox.StoredHeader].self, from: Data(headers.utf8))) ?? []
                records.append(
                    KafkaProducerRecord(
                        topic: topic, key: key.map { Array($0.readableBytesView) }, value: Array(value.readableBytesView),
                        headers: stored.map { KafkaHeader(name: $0.name, value: $0.value.flatMap { Data(base64Encoded: $0) }.map { Array($0) }) }
                    ))
                sent.append(seq)
            }
            guard !records.isEmpty else { return 0 }
            for result in await producer.send(records) {
                _ = try result.get()
            }
            // Exactly the rows sent, not `seq <= last`: a writer that took a lower seq may have
            // committed while the batch was being sent, and this statement would see its row.
            try await connection.query("DELETE FROM push.planner_outbox WHERE seq = ANY(\(sent))", logger: logger)
            return records.count
        }
        published.increment(by: count ?? 0)
        return count
    }
}
