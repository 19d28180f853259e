import Foundation
import Kafka
import PostgresNIO
import PushPlanning
import PushRuntime
import PushTestSupport
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
            more: { configuration, postgres, producer, logger in
                [
                    PlannerOutboxPublisher(
                        postgres: postgres, producer: producer, catalog: configuration.topics, outboxWritten: written, busyRetry: .milliseconds(20),
                        logger: logger)
                ]
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
                try await eventually("the outbox holds none of the writers' rows") {
                    try await h.int("SELECT count(*)::int FROM push.planner_outbox WHERE topic = \(topic)") == 0
                }
                let published = Set(try await h.records(topic).map { String(decoding: $0.value, as: UTF8.self) })
                let expected = Set((0..<writers).flatMap { writer in (0..<perWriter).map { "w\(writer)-\($0)" } })
                let missing = expected.subtracting(published)
                #expect(missing.isEmpty, "rows deleted from the outbox without being published: \(missing.sorted())")
                #expect(published.count == expected.count)
            })
    }

    /// Planners of two deployments (or of two tests) on one database: a row the broker refuses
    /// for one of them (its topic does not exist) is retried until the broker takes it, and must
    /// not hold up the other's rows. With one outbox for the whole database, the refused row was
    /// the oldest of every batch, so every later row of every planner waited behind it.
    @Test("a row the broker keeps refusing holds up its own deployment's outbox only, not another's on the same database")
    func deploymentsApart() async throws {
        // One wakeup per publisher (a Wakeup has one waiter), as each planner process has its own.
        let (written, writtenOther) = (Wakeup(), Wakeup())
        // The other deployment's topics are never created: its row is refused.
        let other = try RuntimeConfiguration(
            service: "planning-tests", defaultOpsPort: 0, environment: EnvironmentSettings(PlanningHarness.environment(suffix: PlanningHarness.makeSuffix())))
        var refusing = other.producer
        refusing.deliveryTimeoutMilliseconds = 10_000
        try await PlanningHarness.run(
            planner: false,
            more: { configuration, postgres, producer, logger in
                let otherProducer = try KafkaProducer(configuration: refusing, logger: logger)
                return [
                    otherProducer,
                    PlannerOutboxPublisher(
                        postgres: postgres, producer: producer, catalog: configuration.topics, outboxWritten: written, busyRetry: .milliseconds(20),
                        logger: logger),
                    PlannerOutboxPublisher(
                        postgres: postgres, producer: otherProducer, catalog: other.topics, outboxWritten: writtenOther, busyRetry: .milliseconds(20),
                        logger: logger),
                ]
            },
            { h in
                let refused = other.topics.deliveryEvents.name
                let topic = h.topics.deliveryEvents.name
                try await h.postgres.withTransaction(logger: h.logger) { connection in
                    try await PlannerOutbox.insert(
                        [KafkaProducerRecord(topic: refused, key: Array("x".utf8), value: Array("refused".utf8))], on: connection, logger: h.logger)
                }
                writtenOther.signal()
                written.signal()
                try await h.postgres.withTransaction(logger: h.logger) { connection in
                    try await PlannerOutbox.insert(
                        [KafkaProducerRecord(topic: topic, key: Array("y".utf8), value: Array("ours".utf8))], on: connection, logger: h.logger)
                }
                written.signal()
                // Well within the refused row's 10 s delivery timeout.
                try await eventually(within: .seconds(6), "this deployment's row is published while the other's is refused") {
                    try await h.int("SELECT count(*)::int FROM push.planner_outbox WHERE topic = \(topic)") == 0
                }
                #expect(try await h.records(topic).map { String(decoding: $0.value, as: UTF8.self) } == ["ours"])
                #expect(try await h.int("SELECT count(*)::int FROM push.planner_outbox WHERE topic = \(refused)") == 1, "the refused row stays to be retried")
                try await h.postgres.withConnection { connection in
                    try await connection.query("DELETE FROM push.planner_outbox WHERE topic = \(refused)", logger: h.logger)
                }
            })
    }
}
