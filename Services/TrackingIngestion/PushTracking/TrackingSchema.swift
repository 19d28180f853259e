import PushStore

/// The migrations of the tables PushTracking owns (docs/architecture.md, "Tables and their owners"):
/// `tracking_log` and `tracking_firsts`. `SchemaMigrations.all` (module PushSchema) assembles every owner's list into
/// the one ordered list `pushctl migrate` applies; a version that changed tables of several
/// owners has a part in each, applied together in one transaction. docs/database.md documents
/// the tables.
package enum TrackingSchema {
    package static let migrations: [Migration] = [
        Migration(
            version: 5, name: "tracking log",
            statements: [
                """
                CREATE TABLE push.tracking_log (
                    tracking_id     uuid        PRIMARY KEY,
                    message_id      text        NOT NULL,
                    message_id_form text        NOT NULL CHECK (message_id_form IN ('uuid', 'decimal')),
                    delivery_id     text        NOT NULL,
                    tag_id          integer     NOT NULL,
                    kind            text        NOT NULL CHECK (kind IN ('received', 'opened', 'other')),
                    occurred_at     timestamptz NOT NULL,
                    recorded_at     timestamptz NOT NULL DEFAULT now(),
                    kafka_partition integer     NOT NULL,
                    kafka_offset    bigint      NOT NULL
                )
                """,
                "CREATE INDEX tracking_log_delivery_kind_message ON push.tracking_log (delivery_id, kind, message_id)",
                "CREATE INDEX tracking_log_message ON push.tracking_log (message_id, occurred_at)",
                """
                COMMENT ON TABLE push.tracking_log IS
                    'One row per tracking hit (GET /r/) from push.tracking; duplicates of a device are separate rows, a re-read Kafka record is not'
                """,
            ]),
        Migration(
            version: 6, name: "delivery indicators",
            statements: [
                """
                CREATE TABLE push.tracking_firsts (
                    delivery_id text        NOT NULL,
                    message_id  text        NOT NULL,
                    kind        text        NOT NULL CHECK (kind IN ('received', 'opened')),
                    first_at    timestamptz NOT NULL,
                    PRIMARY KEY (delivery_id, message_id, kind)
                )
                """,
                """
                COMMENT ON TABLE push.tracking_firsts IS
                    'One row per (delivery, message, kind) that has at least one received or opened hit: what makes impressions and opens distinct counts'
                """,
                // Deployments that already have rows: start the counters from what is there.
                """
                INSERT INTO push.tracking_firsts (delivery_id, message_id, kind, first_at)
                SELECT delivery_id, message_id, kind, min(occurred_at) FROM push.tracking_log
                WHERE kind IN ('received', 'opened') GROUP BY delivery_id, message_id, kind
                """,
                """
                INSERT INTO push.delivery_indicator_counts AS c (delivery_id, impressions, opens)
                SELECT delivery_id, count(*) FILTER (WHERE kind = 'received'), count(*) FILTER (WHERE kind = 'opened')
                FROM push.tracking_firsts GROUP BY delivery_id
                ON CONFLICT (delivery_id) DO UPDATE SET impressions = excluded.impressions, opens = excluded.opens
                """,
            ]),
        Migration(
            version: 8, name: "integer delivery and message ids (Campaign's _dId and _mId)",
            statements: [
                "ALTER TABLE push.tracking_log ADD COLUMN broad_log_id integer",
                """
                UPDATE push.tracking_log SET broad_log_id = message_id::integer
                WHERE CASE WHEN message_id_form = 'decimal' THEN message_id::numeric BETWEEN 1 AND 2147483647 ELSE false END
                """,
                "CREATE INDEX tracking_log_broad_log_id ON push.tracking_log (broad_log_id) WHERE broad_log_id IS NOT NULL",
            ]),
        Migration(
            version: 18, name: "broad_log, exclusion_log and tracking_log partitioned by month",
            statements: [
                // Partitioned as `LogPartitionsMigration` says, by the hit's time; PushStore's part
                // of this migration (the partition function) and the planner's are applied first.
                "ALTER TABLE push.tracking_log RENAME TO tracking_log_unpartitioned",
                "CREATE TABLE push.tracking_log (LIKE push.tracking_log_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (occurred_at)",
                "CREATE TABLE push.tracking_log_default PARTITION OF push.tracking_log DEFAULT",
                // A partition for every month the existing rows name, and for this month and the next two.
                """
                SELECT push.create_log_partition('tracking_log', at) FROM (
                    SELECT occurred_at AS at FROM push.tracking_log_unpartitioned
                    UNION SELECT now() + n * interval '1 month' FROM generate_series(0, 2) AS n
                ) months
                """,
                "INSERT INTO push.tracking_log SELECT * FROM push.tracking_log_unpartitioned",
                "DROP TABLE push.tracking_log_unpartitioned",
                "ALTER TABLE push.tracking_log ADD PRIMARY KEY (tracking_id, occurred_at)",
                "CREATE INDEX tracking_log_delivery_kind_message ON push.tracking_log (delivery_id, kind, message_id)",
                "CREATE INDEX tracking_log_message ON push.tracking_log (message_id, occurred_at)",
                "CREATE INDEX tracking_log_broad_log_id ON push.tracking_log (broad_log_id) WHERE broad_log_id IS NOT NULL",
                """
                COMMENT ON TABLE push.tracking_log IS
                    'One row per tracking hit (GET /r/) from push.tracking; duplicates of a device are separate rows, a re-read Kafka record is not; partitioned by month of occurred_at'
                """,
            ]),
    ]
}
