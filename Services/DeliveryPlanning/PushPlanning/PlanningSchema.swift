import PushStore

/// The migrations of the tables PushPlanning owns (docs/architecture.md, "Tables and their owners"):
/// deliveries, their plans, shards, controls and ids, `broad_log`, `exclusion_log` and the
/// delivery indicators. `SchemaMigrations.all` (module PushSchema) assembles every owner's list into
/// the one ordered list `pushctl migrate` applies; a version that changed tables of several
/// owners has a part in each, applied together in one transaction. docs/database.md documents
/// the tables.
package enum PlanningSchema {
    package static let migrations: [Migration] = [
        Migration(
            version: 4, name: "delivery planning: plans, outbox, deliveries, broad log, exclusion log",
            statements: [
                """
                CREATE TABLE push.delivery_plans (
                    delivery_id   text        PRIMARY KEY,
                    request_id    text        NOT NULL UNIQUE,
                    accepted      jsonb       NOT NULL,
                    status        text        NOT NULL CHECK (status IN ('accepted', 'planning', 'planned')),
                    send_at       timestamptz NOT NULL,
                    cursor_app    uuid,
                    cursor_token  text,
                    targeted      bigint      NOT NULL DEFAULT 0,
                    excluded      bigint      NOT NULL DEFAULT 0,
                    failed        bigint      NOT NULL DEFAULT 0,
                    pending_chunk jsonb,
                    started_at    timestamptz,
                    planned_at    timestamptz,
                    updated_at    timestamptz NOT NULL DEFAULT now()
                )
                """,
                "CREATE INDEX delivery_plans_due ON push.delivery_plans (send_at) WHERE status <> 'planned'",
                """
                COMMENT ON TABLE push.delivery_plans IS
                    'The delivery planner''s working state (not an analyst table): one row per accepted request, its fan-out cursor and the chunk in flight'
                """,
                """
                CREATE TABLE push.planner_outbox (
                    seq        bigserial   PRIMARY KEY,
                    topic      text        NOT NULL,
                    key        bytea,
                    value      bytea       NOT NULL,
                    headers    jsonb       NOT NULL DEFAULT '[]',
                    created_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                """
                COMMENT ON TABLE push.planner_outbox IS
                    'Events the planner decided in a transaction and has not yet seen stored by the broker (transactional outbox)'
                """,
                """
                CREATE TABLE push.deliveries (
                    delivery_id         text        PRIMARY KEY,
                    request_id          text        NOT NULL,
                    service_id          uuid        NOT NULL,
                    service_name        text        NOT NULL,
                    status              text        NOT NULL CHECK (status IN ('accepted', 'planning', 'planned')),
                    apps                jsonb       NOT NULL,
                    audience            jsonb       NOT NULL,
                    content             jsonb       NOT NULL,
                    throttle_per_second integer,
                    targeted            bigint,
                    excluded            bigint,
                    failed_at_planning  bigint,
                    valid_until         timestamptz NOT NULL,
                    send_at             timestamptz NOT NULL,
                    accepted_at         timestamptz NOT NULL,
                    planning_started_at timestamptz,
                    planned_at          timestamptz,
                    updated_at          timestamptz NOT NULL DEFAULT now()
                )
                """,
                "CREATE INDEX deliveries_request ON push.deliveries (request_id)",
                "CREATE INDEX deliveries_accepted ON push.deliveries (accepted_at)",
                """
                CREATE TABLE push.delivery_rejections (
                    request_id       text,
                    reason           text        NOT NULL,
                    source_topic     text        NOT NULL,
                    source_partition integer     NOT NULL,
                    source_offset    bigint      NOT NULL,
                    rejected_at      timestamptz NOT NULL,
                    PRIMARY KEY (source_topic, source_partition, source_offset)
                )
                """,
                "CREATE INDEX delivery_rejections_request ON push.delivery_rejections (request_id)",
                """
                CREATE TABLE push.exclusion_log (
                    delivery_id        text        NOT NULL,
                    app_id             uuid        NOT NULL,
                    registration_token text        NOT NULL,
                    platform           text        NOT NULL,
                    reason             text        NOT NULL,
                    excluded_at        timestamptz NOT NULL,
                    PRIMARY KEY (delivery_id, app_id, registration_token)
                )
                """,
                """
                CREATE TABLE push.broad_log (
                    message_id          uuid        PRIMARY KEY,
                    delivery_id         text        NOT NULL,
                    app_id              uuid        NOT NULL,
                    registration_token  text        NOT NULL,
                    platform            text        NOT NULL CHECK (platform IN ('ios', 'android')),
                    status              text        NOT NULL CHECK (status IN ('pending', 'sent', 'failed', 'expired')),
                    failure_type        text        CHECK (failure_type IN ('hard', 'soft', 'ignored')),
                    failure_reason      text,
                    provider_message_id text,
                    attempts            integer     NOT NULL DEFAULT 0,
                    created_at          timestamptz NOT NULL,
                    updated_at          timestamptz NOT NULL,
                    sent_at             timestamptz
                )
                """,
                "CREATE INDEX broad_log_delivery_status ON push.broad_log (delivery_id, status)",
                "CREATE INDEX broad_log_device ON push.broad_log (app_id, registration_token)",
            ]),
        Migration(
            version: 6, name: "delivery indicators",
            statements: [
                """
                CREATE TABLE push.delivery_indicator_counts (
                    delivery_id    text        PRIMARY KEY,
                    to_deliver     bigint,
                    excluded       bigint,
                    sent           bigint      NOT NULL DEFAULT 0,
                    failed         bigint      NOT NULL DEFAULT 0,
                    failed_hard    bigint      NOT NULL DEFAULT 0,
                    failed_soft    bigint      NOT NULL DEFAULT 0,
                    failed_ignored bigint      NOT NULL DEFAULT 0,
                    expired        bigint      NOT NULL DEFAULT 0,
                    impressions    bigint      NOT NULL DEFAULT 0,
                    opens          bigint      NOT NULL DEFAULT 0,
                    updated_at     timestamptz NOT NULL DEFAULT now()
                )
                """,
                """
                COMMENT ON TABLE push.delivery_indicator_counts IS
                    'Per-delivery counters kept incrementally by the deliveries, broad_log and tracking_log projections in their own transactions; read push.delivery_indicators'
                """,
                """
                CREATE VIEW push.delivery_indicators AS
                SELECT delivery_id, to_deliver, excluded,
                       sent + failed + expired AS processed,
                       sent, failed, failed_hard, failed_soft, failed_ignored, expired,
                       impressions, opens,
                       round(impressions::numeric / nullif(sent, 0), 4) AS impression_rate,
                       round(opens::numeric / nullif(sent, 0), 4) AS open_rate,
                       updated_at
                FROM push.delivery_indicator_counts
                """,
                """
                COMMENT ON VIEW push.delivery_indicators IS
                    'Delivery indicators for analysts: counters of push.delivery_indicator_counts with processed and the rates over sent (null while nothing is sent)'
                """,
                // Deployments that already have rows: start the counters from what is there (the
                // tracking service's part of this migration adds the impressions and opens).
                """
                INSERT INTO push.delivery_indicator_counts (delivery_id, to_deliver, excluded, sent, failed, failed_hard, failed_soft, failed_ignored, expired)
                SELECT d.delivery_id, d.targeted, d.excluded, 0, 0, 0, 0, 0, 0 FROM push.deliveries d WHERE d.status = 'planned'
                """,
                """
                INSERT INTO push.delivery_indicator_counts AS c (delivery_id, sent, failed, failed_hard, failed_soft, failed_ignored, expired)
                SELECT delivery_id, count(*) FILTER (WHERE status = 'sent'), count(*) FILTER (WHERE status = 'failed'),
                       count(*) FILTER (WHERE failure_type = 'hard'), count(*) FILTER (WHERE failure_type = 'soft'),
                       count(*) FILTER (WHERE failure_type = 'ignored'), count(*) FILTER (WHERE status = 'expired')
                FROM push.broad_log WHERE status <> 'pending' GROUP BY delivery_id
                ON CONFLICT (delivery_id) DO UPDATE SET sent = excluded.sent, failed = excluded.failed, failed_hard = excluded.failed_hard,
                    failed_soft = excluded.failed_soft, failed_ignored = excluded.failed_ignored, expired = excluded.expired
                """,
            ]),
        Migration(
            version: 8, name: "integer delivery and message ids (Campaign's _dId and _mId)",
            statements: [
                """
                CREATE SEQUENCE push.delivery_ids AS integer MINVALUE 1 MAXVALUE 2147483647 NO CYCLE
                """,
                """
                COMMENT ON SEQUENCE push.delivery_ids IS
                    'The delivery planner''s delivery ids (the payload''s _dId): one per accepted request, kept in push.delivery_plans so that a replayed request keeps its id'
                """,
                """
                CREATE TABLE push.broad_log_id_allocator (
                    singleton   boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                    next_id     bigint  NOT NULL CHECK (next_id BETWEEN 1 AND 2147483648),
                    updated_at  timestamptz NOT NULL DEFAULT now()
                )
                """,
                "INSERT INTO push.broad_log_id_allocator (next_id) VALUES (1)",
                """
                COMMENT ON TABLE push.broad_log_id_allocator IS
                    'The next broadLog id (the payload''s _mId) the delivery planner hands out; planners reserve a block per fan-out chunk and wrap to 1 after 2^31 - 1'
                """,
                "ALTER TABLE push.broad_log ADD COLUMN broad_log_id integer",
                "CREATE INDEX broad_log_broad_log_id ON push.broad_log (broad_log_id)",
            ]),
        Migration(
            version: 11, name: "delivery ids reserved by the admin API",
            statements: [
                """
                CREATE TABLE push.delivery_id_reservations (
                    request_id  text        PRIMARY KEY,
                    delivery_id text        NOT NULL UNIQUE,
                    reserved_at timestamptz NOT NULL DEFAULT now()
                )
                """,
                """
                COMMENT ON TABLE push.delivery_id_reservations IS
                    'Delivery ids the admin API answered for requests it published on push.delivery-requests (POST /admin/v1/deliveries), taken from push.delivery_ids; the intake gives such a request this id (planner state, not an analyst table)'
                """,
            ]),
        Migration(
            version: 12, name: "delivery controls: cancel, pause, resume",
            statements: [
                "CREATE SEQUENCE push.delivery_control_versions",
                """
                CREATE TABLE push.delivery_controls (
                    delivery_id text        PRIMARY KEY,
                    state       text        NOT NULL CHECK (state IN ('active', 'paused', 'cancelled')),
                    changed_at  timestamptz NOT NULL,
                    event_id    uuid        NOT NULL,
                    version     bigint      NOT NULL DEFAULT nextval('push.delivery_control_versions')
                )
                """,
                "CREATE INDEX delivery_controls_version ON push.delivery_controls (version)",
                """
                COMMENT ON TABLE push.delivery_controls IS
                    'Deliveries an operator cancelled, paused or resumed, from push.delivery-events (the deliveries projection): the planner and the senders read it; version grows with every change, so a reader asks only for what changed'
                """,
                "ALTER TABLE push.broad_log DROP CONSTRAINT broad_log_status_check",
                "ALTER TABLE push.broad_log ADD CONSTRAINT broad_log_status_check CHECK (status IN ('pending', 'sent', 'failed', 'expired', 'cancelled'))",
                "ALTER TABLE push.delivery_indicator_counts ADD COLUMN cancelled bigint NOT NULL DEFAULT 0",
                """
                CREATE OR REPLACE VIEW push.delivery_indicators AS
                SELECT delivery_id, to_deliver, excluded,
                       sent + failed + expired + cancelled AS processed,
                       sent, failed, failed_hard, failed_soft, failed_ignored, expired,
                       impressions, opens,
                       round(impressions::numeric / nullif(sent, 0), 4) AS impression_rate,
                       round(opens::numeric / nullif(sent, 0), 4) AS open_rate,
                       updated_at, cancelled
                FROM push.delivery_indicator_counts
                """,
            ]),
        Migration(
            version: 14, name: "proof deliveries",
            statements: [
                "ALTER TABLE push.deliveries ADD COLUMN proof boolean NOT NULL DEFAULT false",
                "COMMENT ON COLUMN push.deliveries.proof IS 'A proof: sent to its test recipients only; leave it out of reports over many deliveries'",
            ]),
        Migration(
            version: 15, name: "message templates",
            statements: [
                "ALTER TABLE push.deliveries ADD COLUMN template_name text, ADD COLUMN template_version integer"
            ]),
        Migration(
            version: 18, name: "broad_log, exclusion_log and tracking_log partitioned by month",
            statements: [
                // Partitioned as `LogPartitionsMigration` says (its function is created by
                // PushStore's part of this migration, applied first).
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

                // A partition for every month the existing rows name, and for this month and the next two.
                """
                SELECT push.create_log_partition(parent, at) FROM (
                    SELECT 'broad_log' AS parent, log_month::timestamp AT TIME ZONE 'UTC' AS at FROM push.broad_log_deliveries
                    UNION SELECT 'exclusion_log', coalesce(d.send_at, e.excluded_at)
                          FROM push.exclusion_log_unpartitioned e LEFT JOIN push.deliveries d ON d.delivery_id = e.delivery_id
                    UNION SELECT t, now() + n * interval '1 month'
                          FROM unnest(ARRAY['broad_log', 'exclusion_log']) AS t, generate_series(0, 2) AS n
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
                "DROP TABLE push.broad_log_unpartitioned",
                "DROP TABLE push.exclusion_log_unpartitioned",

                // Keys and indexes, built once on the copied rows (each partition gets its own).
                "ALTER TABLE push.broad_log ADD PRIMARY KEY (message_id, log_month)",
                "CREATE INDEX broad_log_delivery_status ON push.broad_log (delivery_id, status)",
                "CREATE INDEX broad_log_device ON push.broad_log (app_id, registration_token)",
                "CREATE INDEX broad_log_broad_log_id ON push.broad_log (broad_log_id)",
                "ALTER TABLE push.exclusion_log ADD PRIMARY KEY (delivery_id, app_id, registration_token, log_month)",
                """
                COMMENT ON TABLE push.broad_log IS
                    'One row per message, from the message topics and push.message-results; partitioned by log_month (the delivery''s UTC month)'
                """,
                """
                COMMENT ON TABLE push.exclusion_log IS
                    'Devices left out of a delivery at targeting, from push.delivery-events; partitioned by log_month (the delivery''s UTC month)'
                """,
            ]),
        Migration(
            version: 19, name: "delivery shards: one delivery fanned out by several planners",
            statements: [
                """
                CREATE TABLE push.delivery_shards (
                    delivery_id   text        NOT NULL REFERENCES push.delivery_plans (delivery_id) ON DELETE CASCADE,
                    shard         integer     NOT NULL CHECK (shard >= 0),
                    start_app     uuid,
                    start_token   text,
                    end_app       uuid,
                    end_token     text,
                    cursor_app    uuid,
                    cursor_token  text,
                    status        text        NOT NULL DEFAULT 'planning' CHECK (status IN ('planning', 'planned')),
                    targeted      bigint      NOT NULL DEFAULT 0,
                    excluded      bigint      NOT NULL DEFAULT 0,
                    failed        bigint      NOT NULL DEFAULT 0,
                    pending_chunk jsonb,
                    planned_at    timestamptz,
                    updated_at    timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (delivery_id, shard)
                )
                """,
                """
                COMMENT ON TABLE push.delivery_shards IS
                    'The planner''s working state per shard of a delivery (not an analyst table): a key range of push.subscriptions ((start, end], in (app_id, registration_token) order; null start = from the first, null end = to the last), its fan-out cursor and the chunk in flight. Any planner instance plans a shard it holds the session advisory lock of'
                """,
                // Plans half planned by a planner older than shards continue as one shard, from
                // their cursor and their pending chunk.
                """
                INSERT INTO push.delivery_shards (delivery_id, shard, cursor_app, cursor_token, targeted, excluded, failed, pending_chunk)
                SELECT delivery_id, 0, cursor_app, cursor_token, targeted, excluded, failed, pending_chunk
                FROM push.delivery_plans WHERE status = 'planning'
                """,
                "UPDATE push.delivery_plans SET pending_chunk = NULL WHERE status = 'planning'",
            ]),
        Migration(
            version: 20, name: "delivery priorities (lanes)",
            statements: [
                "ALTER TABLE push.deliveries ADD COLUMN priority text NOT NULL DEFAULT 'bulk' CHECK (priority IN ('transactional', 'bulk'))",
                """
                COMMENT ON COLUMN push.deliveries.priority IS
                    'The request''s priority: transactional deliveries take their own lane (topics, fan-out, sender consumers); bulk otherwise'
                """,
            ]),
        Migration(
            version: 24, name: "exclusion_log keyed by token digest (DeliveryExclusionsRecorded v2)",
            statements: [
                "ALTER TABLE push.exclusion_log ADD COLUMN token_digest text",
                "UPDATE push.exclusion_log SET token_digest = push.token_digest(registration_token)",
                "ALTER TABLE push.exclusion_log ALTER COLUMN token_digest SET NOT NULL",
                "ALTER TABLE push.exclusion_log DROP CONSTRAINT exclusion_log_pkey",
                "ALTER TABLE push.exclusion_log ALTER COLUMN registration_token DROP NOT NULL",
                "ALTER TABLE push.exclusion_log ADD CONSTRAINT exclusion_log_pkey PRIMARY KEY (delivery_id, app_id, token_digest, log_month)",
                // What an erasure deletes by (PersonErasure), and the analysts' join to subscriptions.
                "CREATE INDEX exclusion_log_device ON push.exclusion_log (app_id, token_digest)",
                """
                COMMENT ON COLUMN push.exclusion_log.token_digest IS
                    'Lowercase hex SHA-256 of the device''s registration token (push.token_digest, push.subscriptions.token_digest): how DeliveryExclusionsRecorded v2 names the device; part of the primary key'
                """,
                """
                COMMENT ON COLUMN push.exclusion_log.registration_token IS
                    'The device''s token: from push.subscriptions when the row was written from a v2 event and the device was still there, NULL otherwise (a device purged or erased before); rows from v1 events keep the token the event carried'
                """,
            ]),
        Migration(
            version: 25, name: "delivery_controls: the transaction that wrote each change (the senders' read cursor)",
            statements: [
                // `version` orders changes but is taken before its transaction commits, so two
                // projection transactions (two planner instances) can commit out of version order;
                // a reader that resumes after the highest version it saw would skip the other
                // forever. Readers resume from their last snapshot's oldest running transaction.
                "ALTER TABLE push.delivery_controls ADD COLUMN writer_xid xid8 NOT NULL DEFAULT pg_current_xact_id()",
                """
                CREATE FUNCTION push.delivery_controls_writer() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN
                    NEW.writer_xid := pg_current_xact_id();
                    RETURN NEW;
                END
                $$
                """,
                """
                CREATE TRIGGER delivery_controls_writer BEFORE INSERT OR UPDATE ON push.delivery_controls
                FOR EACH ROW EXECUTE FUNCTION push.delivery_controls_writer()
                """,
                "CREATE INDEX delivery_controls_writer ON push.delivery_controls (writer_xid)",
                """
                COMMENT ON COLUMN push.delivery_controls.writer_xid IS
                    'The transaction that last wrote the row (set by a trigger): a reader that asks for rows with writer_xid at or above the oldest transaction running at its previous read (pg_snapshot_xmin) sees every change committed since, whatever the commit order'
                """,
            ]),
        Migration(
            version: 26, name: "broad_log names the device by token digest (message results v2)",
            statements: [
                // Results name the device by digest since version 2: a row a result creates takes
                // its token from push.subscriptions, and a device purged or erased has none.
                "ALTER TABLE push.broad_log ADD COLUMN token_digest text",
                "UPDATE push.broad_log SET token_digest = push.token_digest(registration_token)",
                "ALTER TABLE push.broad_log ALTER COLUMN token_digest SET NOT NULL",
                "ALTER TABLE push.broad_log ALTER COLUMN registration_token DROP NOT NULL",
                // What an erasure deletes by (PersonErasure), and the analysts' join to subscriptions.
                "CREATE INDEX broad_log_device_digest ON push.broad_log (app_id, token_digest)",
                """
                COMMENT ON COLUMN push.broad_log.token_digest IS
                    'Lowercase hex SHA-256 of the device''s registration token (push.token_digest, push.subscriptions.token_digest): how the results (v2) name the device'
                """,
                """
                COMMENT ON COLUMN push.broad_log.registration_token IS
                    'The device''s token: from the planned message record, or, for a row a result created first, from push.subscriptions while the device was there; NULL when neither had it (a device purged or erased before)'
                """,
            ]),
        Migration(
            version: 27, name: "deliveries and planned plans keep a userKeys audience's and a proof's recipients as counts (DeliveryAccepted v2)",
            statements: [
                // What DeliveryAccepted version 2 writes and the projection keeps since: a list of
                // user keys outlives any erasure of the people it names.
                """
                UPDATE push.deliveries SET audience = jsonb_build_object('userKeyCount', jsonb_array_length(audience->'userKeys'))
                WHERE jsonb_typeof(audience->'userKeys') = 'array'
                """,
                // A planned delivery's recipients are never read again (the fan-out counts them
                // when it finishes since this version).
                """
                UPDATE push.delivery_plans
                SET accepted = jsonb_set(accepted, '{audience}', jsonb_build_object('userKeyCount', jsonb_array_length(accepted->'audience'->'userKeys')))
                WHERE status = 'planned' AND jsonb_typeof(accepted->'audience'->'userKeys') = 'array'
                """,
                """
                UPDATE push.delivery_plans
                SET accepted = jsonb_set(accepted, '{proof}', jsonb_strip_nulls(jsonb_build_object(
                        'userKeyCount', jsonb_array_length(accepted->'proof'->'userKeys'),
                        'registrationTokenCount', jsonb_array_length(accepted->'proof'->'registrationTokens'))))
                WHERE status = 'planned' AND jsonb_typeof(accepted->'proof') = 'object'
                """,
                """
                COMMENT ON COLUMN push.deliveries.audience IS
                    'The request''s audience: {"all": true}, {"where": {...}}, or for a list of user keys {"userKeyCount": n} (never the keys: DeliveryAccepted v2)'
                """,
            ]),
        Migration(
            version: 29, name: "a result's broad_log update stays on the row's page (no index on status, fillfactor 50)",
            statements: [
                // A message's row is written twice: pending, then final. With `status` in an index
                // and full pages, the second write was a new row version in another page with an
                // entry in each of the table's five indexes; without an indexed column changing and
                // with room on the page, PostgreSQL keeps it on the page with no index entry (a
                // heap-only tuple). Per-delivery reads by status scan the delivery's rows instead.
                "CREATE INDEX broad_log_delivery ON push.broad_log (delivery_id)",
                "DROP INDEX push.broad_log_delivery_status",
                LogPartitionsMigration.createPartitionFunction(replacing: true, broadLogFillfactor: broadLogFillfactor),
                // Partitions that exist take the setting for the pages they add from now on.
                """
                DO $$
                DECLARE part regclass;
                BEGIN
                    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'push.broad_log'::regclass LOOP
                        EXECUTE format('ALTER TABLE %s SET (fillfactor = \(broadLogFillfactor))', part);
                    END LOOP;
                END
                $$
                """,
            ]),
        Migration(
            version: 30, name: "broad_log rows written once, by the result: full pages again, no pending rows from now on",
            statements: [
                // The broad log projection reads only the results: a message's row is
                // inserted once, final, and never updated, so the room migration 29 left on each
                // page for the final versions of pending rows is only waste. Rows an older version
                // left pending still take their result (an update, no longer kept on the page).
                LogPartitionsMigration.createPartitionFunction(replacing: true, broadLogFillfactor: nil),
                """
                DO $$
                DECLARE part regclass;
                BEGIN
                    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'push.broad_log'::regclass LOOP
                        EXECUTE format('ALTER TABLE %s RESET (fillfactor)', part);
                    END LOOP;
                END
                $$
                """,
                """
                COMMENT ON TABLE push.broad_log IS
                    'One row per message with an outcome, written by its result from push.message-results; partitioned by log_month (the delivery''s UTC month)'
                """,
            ]),
        Migration(
            version: 31, name: "a device's broad_log history by token digest only (one index fewer per message)",
            statements: [
                // `(app_id, token_digest)` finds the same rows: the digest is a function of the
                // token (`push.token_digest`). Each message's row was one more index entry and WAL
                // record for an index nothing in the channel needs (docs/benchmarks.md).
                "DROP INDEX push.broad_log_device"
            ]),
        Migration(
            version: 32, name: "planned shards keep no registration token",
            statements: [
                // A planned shard's range and cursor are never read again; its tokens were the
                // only copies of devices' tokens outside push.subscriptions that an erasure missed.
                "UPDATE push.delivery_shards SET start_token = NULL, end_token = NULL, cursor_token = NULL WHERE status = 'planned'",
                """
                COMMENT ON TABLE push.delivery_shards IS
                    'The planner''s working state per shard of a delivery (not an analyst table): a key range of push.subscriptions ((start, end], in (app_id, registration_token) order; null start = from the first, null end = to the last), its fan-out cursor and the chunk in flight. Any planner instance plans a shard it holds the session advisory lock of. A planned shard keeps no token (start_token, end_token, cursor_token null)'
                """,
            ]),
        Migration(
            version: 35, name: "the language texts each broad_log message carried",
            statements: [
                // Nullable, no default: on the partitioned table a catalog change only, whatever
                // the number of rows.
                "ALTER TABLE push.broad_log ADD COLUMN language text",
                """
                COMMENT ON COLUMN push.broad_log.language IS
                    'The tag of the delivery''s content.languages whose texts the message carried (fr, pt-BR); null for the default texts, and for messages planned before migration 35'
                """,
            ]),
        Migration(
            version: 37, name: "the bulk deliveries each person got, for the services' frequency caps",
            statements: [
                """
                CREATE TABLE push.frequency_log (
                    service_id uuid        NOT NULL,
                    subject_id uuid        NOT NULL,
                    delivery_id text       NOT NULL,
                    planned_at timestamptz NOT NULL,
                    PRIMARY KEY (service_id, subject_id, delivery_id)
                )
                """,
                "CREATE INDEX frequency_log_planned_at ON push.frequency_log (planned_at)",
                """
                COMMENT ON TABLE push.frequency_log IS
                    'The planner''s own state (not an analyst table): one row per person and bulk delivery of a service with a frequency cap, written with the chunk that planned the person''s first message; the person is its data-key subject (push.subject_keys.subject_id: the user key, or the device without one), so an erasure, which deletes the key, leaves no link to anyone. Rows older than 31 days are deleted'
                """,
            ]),
        Migration(
            version: 38, name: "the A/B variant each broad_log message carried, and the figures per variant",
            statements: [
                // Nullable, no default: a catalog change only, as migration 35.
                "ALTER TABLE push.broad_log ADD COLUMN variant text",
                """
                COMMENT ON COLUMN push.broad_log.variant IS
                    'The name of the delivery''s A/B variant (content.variants) whose texts the message carried; null for a delivery without variants, and for messages planned before migration 38'
                """,
                // Per delivery and variant, from the messages' rows: the grouping column lets a
                // `WHERE delivery_id = ...` reach broad_log's (delivery_id) index.
                """
                CREATE VIEW push.delivery_variants AS
                SELECT b.delivery_id, b.variant,
                       count(*) AS messages,
                       count(*) FILTER (WHERE b.status = 'sent') AS sent,
                       count(*) FILTER (WHERE b.status = 'failed') AS failed,
                       count(*) FILTER (WHERE b.status = 'expired') AS expired,
                       count(*) FILTER (WHERE b.status = 'cancelled') AS cancelled,
                       count(r.message_id) AS received,
                       count(o.message_id) AS opened,
                       round(count(r.message_id)::numeric / nullif(count(*) FILTER (WHERE b.status = 'sent'), 0), 4) AS impression_rate,
                       round(count(o.message_id)::numeric / nullif(count(*) FILTER (WHERE b.status = 'sent'), 0), 4) AS open_rate
                FROM push.broad_log b
                LEFT JOIN push.tracking_firsts r ON r.delivery_id = b.delivery_id AND r.message_id = b.broad_log_id::text AND r.kind = 'received'
                LEFT JOIN push.tracking_firsts o ON o.delivery_id = b.delivery_id AND o.message_id = b.broad_log_id::text AND o.kind = 'opened'
                WHERE b.variant IS NOT NULL
                GROUP BY b.delivery_id, b.variant
                """,
                """
                COMMENT ON VIEW push.delivery_variants IS
                    'An A/B test''s figures: per delivery with content.variants and per variant, its messages with a final status in broad_log, sent, failed, expired, cancelled, received and opened (distinct messages with such a hit, from tracking_firsts) and the rates over sent. Computed from the rows, so an erasure, which deletes a person''s rows, lowers them (delivery_indicators, counters, does not)'
                """,
            ]),
    ]

    /// Per cent of each page migration 29 filled with new rows: the other half took the final
    /// versions of the page's pending rows, so a result's update was a heap-only tuple. Since
    /// migration 30 rows are written once and pages are filled (docs/database.md).
    static let broadLogFillfactor = 50
}
