import Foundation
import Kafka
import PostgresNIO
import PushPlanning
import PushRuntime
import Testing

/// The planner's outbox against the real broker and PostgreSQL.
@Suite("Planner outbox against the real broker and PostgreSQL", .serialized)
struct PlannerOutboxTests {
    /// Writers whose transactions commit in another order than their rows' `seq` (the intake
    /// and the fan-outs write concurrently): a row committed while the publisher was sending
    /// a batch of later rows must still be published, not deleted with that batch.
    @Test("rows committed out of seq order while a batch is being sent are all published, none deleted unsent")
    func outOfOrderCommits() async throws {
        let written = Wakeup()
        let (writers, perWriter) = (8, 25)
        try await PlanningHarness.run(
            planner: false,
            more: { _, postgres, producer, logger in
                [PlannerOutboxPublisher(postgres: postgres, producer: producer, outboxWritten: written, busyRetry: .milliseconds(20), logger: logger)]
            },
            { h in
                let topic = h.topics.deliveryEvents.name
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for n in 0..<perWriter {
                                // Take a seq, then hold the transaction open a while before committing:
                                // later seqs of the other writers commit (and are sent) meanwhile.
                                try await h.postgres.withTransaction(logger: h.logger) { connection in
                                    let record = KafkaProducerRecord(topic: topic, key: Array("w\(writer)".utf8), value: Array("w\(writer)-\(n)".utf8))
                                    try await PlannerOutbox.insert([record], on: connection, logger: h.logger)
                                    try await Task.sleep(for: .milliseconds(Int.random(in: 0...15)))
                                }
                                written.signal()
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                try await h.eventually("the outbox holds none of the writers' rows") {
                    try await h.int("SELECT count(*)::int FROM push.planner_outbox WHERE topic = \(topic)") == 0
                }
                let published = Set(try await h.records(topic).map { String(decoding: $0.value, as: UTF8.self) })
                let expected = Set((0..<writers).flatMap { writer in (0..<perWriter).map { "w\(writer)-\($0)" } })
                let missing = expected.subtracting(published)
                #expect(missing.isEmpty, "rows deleted from the outbox without being published: \(missing.sorted())")
                #expect(published.count == expected.count)
            })
    }
}
