/// One schema change. Applied once, in a transaction, in version order; never edited after it
/// shipped: a correction is a new migration.
public struct Migration: Sendable {
    public var version: Int
    public var name: String
    /// Statements run in order (one statement each: the extended protocol takes one at a time).
    public var statements: [String]
}

/// Every migration of schema `push`, oldest first. docs/database.md documents the tables.
public enum Migrations {
    public static let all: [Migration] = [
        Migration(version: 1, name: "consumer offsets and event journal", statements: [
            """
            CREATE TABLE push.consumer_offsets (
                group_id    text        NOT NULL,
                topic       text        NOT NULL,
                partition   integer     NOT NULL,
                next_offset bigint      NOT NULL,
                updated_at  timestamptz NOT NULL DEFAULT now(),
                PRIMARY KEY (group_id, topic, partition)
            )
            """,
            """
            COMMENT ON TABLE push.consumer_offsets IS
                'Next Kafka offset to project per consumer group and partition; written in the same transaction as the projection it belongs to'
            """,
            """
            CREATE TABLE push.event_journal (
                seq            bigserial   PRIMARY KEY,
                topic          text        NOT NULL,
                partition      integer     NOT NULL,
                "offset"       bigint      NOT NULL,
                event_id       uuid        NOT NULL,
                type           text        NOT NULL,
                version        integer     NOT NULL,
                aggregate_key  text        NOT NULL,
                occurred_at    timestamptz NOT NULL,
                correlation_id text,
                recorded_at    timestamptz NOT NULL DEFAULT now()
            )
            """,
            "CREATE INDEX event_journal_type_time ON push.event_journal (type, occurred_at)",
            "CREATE INDEX event_journal_correlation ON push.event_journal (correlation_id) WHERE correlation_id IS NOT NULL",
            """
            COMMENT ON TABLE push.event_journal IS
                'One row per event read from the journaled topics (metadata only); exactly once per Kafka record'
            """,
        ]),
    ]
}
