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
package enum LogPartitionsMigration {
    /// PushStore's part of migration 18: the function that creates a month's partition of any of
    /// the three logs (`LogPartitions` calls it). The tables' owners partition their tables in
    /// their parts of the same migration (`PlanningSchema`, `TrackingSchema`), applied after this one.
    package static let functionStatements: [String] = [
        // Creates the month partition of `parent` holding `at`, moving the rows of that month out
        // of the default partition first (a partition cannot be attached over rows the default
        // holds). Months are UTC. Serialised by a transaction-level advisory lock, so two
        // processes may call it at once. Returns false when the partition already existed.
        createPartitionFunction(replacing: false, broadLogFillfactor: nil),
        """
        COMMENT ON FUNCTION push.create_log_partition(text, timestamptz) IS
            'Creates the UTC month partition of push.<parent> (broad_log, exclusion_log, tracking_log) that holds the given time, moving its rows out of the default partition; false when it existed'
        """,
    ]

    /// The text of `push.create_log_partition` (first defined by this migration). With
    /// `broadLogFillfactor`, a new `broad_log` partition leaves that share of each page for the
    /// next versions of its rows (migration 29: a result's update stays on the row's page).
    package static func createPartitionFunction(replacing: Bool, broadLogFillfactor: Int?) -> String {
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
