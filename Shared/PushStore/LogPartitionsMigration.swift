/// Migration 18: `push.broad_log`, `push.exclusion_log` and `push.tracking_log` become tables
/// partitioned by month (declarative range partitioning), each with a default partition, so that
/// `PUSH_LOG_RETENTION_DAYS` drops whole months without rewriting anything (docs/database.md,
/// "Log partitions").
///
/// Partition keys (immutable for a row, so an upsert never has to move a row):
/// - `broad_log.log_month` and `exclusion_log.log_month` (date, first day of a UTC month): the
///   delivery's month, one value per delivery (the month its fan-out may start,
///   `push.deliveries.send_at`, when known, else of its first event the projection reads).
///   Every row of a delivery lands in the same partition, so retention drops deliveries whole,
///   and a replay finds the same month unless the delivery's first events straddle a month's
///   end. The broad log keeps the value per delivery in `push.broad_log_deliveries`, since a
///   result may arrive before anything else of its delivery.
/// - `tracking_log.occurred_at`: the hit's time, carried by its event.
///
/// The primary keys gain the partition key (PostgreSQL requires it); the conflict targets of the
/// projections name it too. Each old table is renamed, copied into its partitioned successor
/// (`LIKE … INCLUDING DEFAULTS INCLUDING CONSTRAINTS`, so columns added by earlier migrations
/// follow), then dropped; indexes are built after the copy.
enum LogPartitionsMigration {
    static let statements: [String] = [
        // Creates the month partition of `parent` holding `at`, moving the rows of that month out
        // of the default partition first (a partition cannot be attached over rows the default
        // holds). Months are UTC. Serialised by a transaction-level advisory lock, so two
        // processes may call it at once. Returns false when the partition already existed.
        createPartitionFunction(replacing: false, broadLogFillfactor: nil),
        """
        COMMENT ON FUNCTION push.create_log_partition(text, timestamptz) IS
            'Creates the UTC month partition of push.<parent> (broad_log, exclusion_log, tracking_log) that holds the given time, moving its rows out of the default partition; false when it existed'
        """,

        // broad_log: the delivery's month, fixed per delivery.
        "ALTER TABLE push.broad_log RENAME TO broad_log_unpartitioned",
        """
        CREATE TABLE push.broad_log_deliveries (
            delivery_id text        PRIMARY KEY,
            log_month   date        NOT NULL
        )
        """,
        """
        COMMENT ON TABLE push.broad_log_deliveries IS
            'The partition key of each delivery''s broad_log rows (broad_log.log_month), fixed by the broad log projection when it first writes a row of the delivery'
        """,
        """
        INSERT INTO push.broad_log_deliveries (delivery_id, log_month)
        SELECT b.delivery_id, date_trunc('month', coalesce(min(d.send_at), min(b.created_at)) AT TIME ZONE 'UTC')::date
        FROM push.broad_log_unpartitioned b LEFT JOIN push.deliveries d ON d.delivery_id = b.delivery_id
        GROUP BY b.delivery_id
        """,
        """
        CREATE TABLE push.broad_log (LIKE push.broad_log_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS, log_month date NOT NULL)
        PARTITION BY RANGE (log_month)
        """,
        "CREATE TABLE push.broad_log_default PARTITION OF push.broad_log DEFAULT",

        // exclusion_log: the delivery's month, from push.deliveries.send_at (projected before its exclusions).
        "ALTER TABLE push.exclusion_log RENAME TO exclusion_log_unpartitioned",
        """
        CREATE TABLE push.exclusion_log (LIKE push.exclusion_log_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS, log_month date NOT NULL)
        PARTITION BY RANGE (log_month)
        """,
        "CREATE TABLE push.exclusion_log_default PARTITION OF push.exclusion_log DEFAULT",

        // tracking_log: the hit's time.
        "ALTER TABLE push.tracking_log RENAME TO tracking_log_unpartitioned",
        "CREATE TABLE push.tracking_log (LIKE push.tracking_log_unpartitioned INCLUDING DEFAULTS INCLUDING CONSTRAINTS) PARTITION BY RANGE (occurred_at)",
        "CREATE TABLE push.tracking_log_default PARTITION OF push.tracking_log DEFAULT",

        // A partition for every month the existing rows name, and for this month and the next two.
        """
        SELECT push.create_log_partition(parent, at) FROM (
            SELECT 'broad_log' AS parent, log_month::timestamp AT TIME ZONE 'UTC' AS at FROM push.broad_log_deliveries
            UNION SELECT 'exclusion_log', coalesce(d.send_at, e.excluded_at)
                  FROM push.exclusion_log_unpartitioned e LEFT JOIN push.deliveries d ON d.delivery_id = e.delivery_id
            UNION SELECT 'tracking_log', occurred_at FROM push.tracking_log_unpartitioned
            UNION SELECT t, now() + n * interval '1 month'
                  FROM unnest(ARRAY['broad_log', 'exclusion_log', 'tracking_log']) AS t, generate_series(0, 2) AS n
        ) months
        """,

        """
        INSERT INTO push.broad_log
        SELECT b.*, k.log_month FROM push.broad_log_unpartitioned b JOIN push.broad_log_deliveries k ON k.delivery_id = b.delivery_id
        """,
        """
        INSERT INTO push.exclusion_log
        SELECT e.*, date_trunc('month', coalesce(d.send_at, e.excluded_at) AT TIME ZONE 'UTC')::date FROM push.exclusion_log_unpartitioned e LEFT JOIN push.deliveries d ON d.delivery_id = e.delivery_id
        """,
        "INSERT INTO push.tracking_log SELECT * FROM push.tracking_log_unpartitioned",
        "DROP TABLE push.broad_log_unpartitioned",
        "DROP TABLE push.exclusion_log_unpartitioned",
        "DROP TABLE push.tracking_log_unpartitioned",

        // Keys and indexes, built once on the copied rows (each partition gets its own).
        "ALTER TABLE push.broad_log ADD PRIMARY KEY (message_id, log_month)",
        "CREATE INDEX broad_log_delivery_status ON push.broad_log (delivery_id, status)",
        "CREATE INDEX broad_log_device ON push.broad_log (app_id, registration_token)",
        "CREATE INDEX broad_log_broad_log_id ON push.broad_log (broad_log_id)",
        "ALTER TABLE push.exclusion_log ADD PRIMARY KEY (delivery_id, app_id, registration_token, log_month)",
        "ALTER TABLE push.tracking_log ADD PRIMARY KEY (tracking_id, occurred_at)",
        "CREATE INDEX tracking_log_delivery_kind_message ON push.tracking_log (delivery_id, kind, message_id)",
        "CREATE INDEX tracking_log_message ON push.tracking_log (message_id, occurred_at)",
        "CREATE INDEX tracking_log_broad_log_id ON push.tracking_log (broad_log_id) WHERE broad_log_id IS NOT NULL",
        """
        COMMENT ON TABLE push.broad_log IS
            'One row per message, from the message topics and push.message-results; partitioned by log_month (the delivery''s UTC month)'
        """,
        """
        COMMENT ON TABLE push.exclusion_log IS
            'Devices left out of a delivery at targeting, from push.delivery-events; partitioned by log_month (the delivery''s UTC month)'
        """,
        """
        COMMENT ON TABLE push.tracking_log IS
            'One row per tracking hit (GET /r/) from push.tracking; duplicates of a device are separate rows, a re-read Kafka record is not; partitioned by month of occurred_at'
        """,
    ]

    /// The text of `push.create_log_partition` (first defined by this migration). With
    /// `broadLogFillfactor`, a new `broad_log` partition leaves that share of each page for the
    /// next versions of its rows (migration 29: a result's update stays on the row's page).
    static func createPartitionFunction(replacing: Bool, broadLogFillfactor: Int?) -> String {
        let storage =
            broadLogFillfactor.map {
                """

                    IF parent = 'broad_log' THEN
                        EXECUTE format('ALTER TABLE push.%I SET (fillfactor = \($0))', part_name);
                    END IF;
                """
            } ?? ""
        return """
            CREATE \(replacing ? "OR REPLACE " : "")FUNCTION push.create_log_partition(parent text, at timestamptz) RETURNS boolean
            LANGUAGE plpgsql AS $$
            DECLARE
                first_day timestamp := date_trunc('month', at AT TIME ZONE 'UTC');
                part_name text := parent || '_p' || to_char(first_day, 'YYYYMM');
                part_key text;
                lo text;
                hi text;
            BEGIN
                part_key := CASE parent WHEN 'broad_log' THEN 'log_month' WHEN 'exclusion_log' THEN 'log_month' WHEN 'tracking_log' THEN 'occurred_at' END;
                IF part_key IS NULL THEN
                    RAISE EXCEPTION 'push.create_log_partition: % is not a partitioned log (broad_log, exclusion_log, tracking_log)', parent;
                END IF;
                -- Bounds as literals that mean the same in every session time zone.
                lo := to_char(first_day, 'YYYY-MM-DD');
                hi := to_char(first_day + interval '1 month', 'YYYY-MM-DD');
                IF part_key = 'occurred_at' THEN
                    lo := lo || ' 00:00:00+00';
                    hi := hi || ' 00:00:00+00';
                END IF;
                PERFORM pg_advisory_xact_lock(hashtext('push.create_log_partition'));
                IF to_regclass('push.' || part_name) IS NOT NULL THEN
                    RETURN false;
                END IF;
                EXECUTE format('CREATE TABLE push.%I (LIKE push.%I INCLUDING DEFAULTS INCLUDING CONSTRAINTS)', part_name, parent);\(storage)
                EXECUTE format(
                    'WITH moved AS (DELETE FROM push.%I WHERE %I >= %L AND %I < %L RETURNING *) INSERT INTO push.%I SELECT * FROM moved',
                    parent || '_default', part_key, lo, part_key, hi, part_name);
                EXECUTE format('ALTER TABLE push.%I ATTACH PARTITION push.%I FOR VALUES FROM (%L) TO (%L)', parent, part_name, lo, hi);
                RETURN true;
            END
            $$
            """
    }
}
