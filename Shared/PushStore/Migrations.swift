/// One schema change. Applied once, in a transaction, in version order; never edited after it
/// shipped: a correction is a new migration.
package struct Migration: Sendable {
    package var version: Int
    package var name: String
    /// Statements run in order (one statement each: the extended protocol takes one at a time).
    package var statements: [String]
}

/// Every migration of schema `push`, oldest first. docs/database.md documents the tables.
package enum Migrations {
    package static let all: [Migration] = [
        Migration(
            version: 1, name: "consumer offsets and event journal",
            statements: [
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
        Migration(
            version: 2, name: "app catalog and subscriptions",
            statements: [
                """
                CREATE TABLE push.services (
                    service_id uuid        PRIMARY KEY,
                    name       text        NOT NULL UNIQUE,
                    label      text        NOT NULL,
                    created_at timestamptz NOT NULL,
                    updated_at timestamptz NOT NULL
                )
                """,
                """
                CREATE TABLE push.apps (
                    app_id                  uuid        PRIMARY KEY,
                    service_id              uuid        NOT NULL,
                    integration_key         text        NOT NULL UNIQUE,
                    platform                text        NOT NULL CHECK (platform IN ('ios', 'android')),
                    environment             text        NOT NULL CHECK (environment IN ('sandbox', 'production')),
                    label                   text        NOT NULL,
                    bundle_id               text,
                    fcm_project_id          text,
                    variables               jsonb       NOT NULL DEFAULT '[]',
                    sounds                  jsonb       NOT NULL DEFAULT '[]',
                    subscription_parameters jsonb       NOT NULL DEFAULT '[]',
                    created_at              timestamptz NOT NULL,
                    updated_at              timestamptz NOT NULL
                )
                """,
                "CREATE INDEX apps_service ON push.apps (service_id)",
                """
                CREATE TABLE push.subscriptions (
                    app_id              uuid        NOT NULL,
                    registration_token  text        NOT NULL,
                    platform            text        NOT NULL,
                    user_key            text        NOT NULL DEFAULT '',
                    device_imei         text,
                    device_name         text        NOT NULL DEFAULT '',
                    device_model        text        NOT NULL DEFAULT '',
                    device_brand        text        NOT NULL DEFAULT '',
                    device_manufacturer text        NOT NULL DEFAULT '',
                    os_name             text        NOT NULL DEFAULT '',
                    os_version          text        NOT NULL DEFAULT '',
                    os_language         text        NOT NULL DEFAULT '',
                    params              jsonb       NOT NULL DEFAULT '{}',
                    disabled            boolean     NOT NULL DEFAULT false,
                    disabled_reason     text,
                    disabled_at         timestamptz,
                    registered_at       timestamptz NOT NULL,
                    updated_at          timestamptz NOT NULL,
                    PRIMARY KEY (app_id, registration_token)
                )
                """,
                "CREATE INDEX subscriptions_user_key ON push.subscriptions (app_id, user_key)",
                "CREATE INDEX subscriptions_params ON push.subscriptions USING gin (params)",
                "CREATE INDEX subscriptions_disabled ON push.subscriptions (disabled_at) WHERE disabled",
            ]),
        Migration(
            version: 3, name: "provider credentials",
            statements: [
                """
                CREATE TABLE push.app_credentials (
                    credential_id uuid        PRIMARY KEY,
                    app_id        uuid        NOT NULL,
                    kind          text        NOT NULL CHECK (kind IN ('apns-token', 'apns-certificate', 'fcm-service-account')),
                    fingerprint   text        NOT NULL,
                    metadata      jsonb       NOT NULL DEFAULT '{}',
                    ciphertext    bytea       NOT NULL,
                    created_at    timestamptz NOT NULL DEFAULT now()
                )
                """,
                "CREATE INDEX app_credentials_app ON push.app_credentials (app_id, created_at)",
                """
                COMMENT ON TABLE push.app_credentials IS
                    'Provider secrets sealed with AES-GCM under PUSH_CREDENTIALS_KEY; a secret store, not a projection: events carry only fingerprints'
                """,
                "ALTER TABLE push.apps ADD COLUMN credential_id uuid",
                "ALTER TABLE push.apps ADD COLUMN credential_kind text",
                "ALTER TABLE push.apps ADD COLUMN credential_fingerprint text",
                "ALTER TABLE push.apps ADD COLUMN credential_updated_at timestamptz",
            ]),
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
                // Deployments that already have rows: start the counters from what is there.
                """
                INSERT INTO push.tracking_firsts (delivery_id, message_id, kind, first_at)
                SELECT delivery_id, message_id, kind, min(occurred_at) FROM push.tracking_log
                WHERE kind IN ('received', 'opened') GROUP BY delivery_id, message_id, kind
                """,
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
                """
                INSERT INTO push.delivery_indicator_counts AS c (delivery_id, impressions, opens)
                SELECT delivery_id, count(*) FILTER (WHERE kind = 'received'), count(*) FILTER (WHERE kind = 'opened')
                FROM push.tracking_firsts GROUP BY delivery_id
                ON CONFLICT (delivery_id) DO UPDATE SET impressions = excluded.impressions, opens = excluded.opens
                """,
            ]),
        Migration(
            version: 7, name: "shared APNs provider tokens",
            statements: [
                """
                CREATE TABLE push.apns_provider_tokens (
                    team_id text NOT NULL,
                    key_id text NOT NULL,
                    key_fingerprint text NOT NULL,
                    sealed_token bytea NOT NULL,
                    issued_at timestamptz NOT NULL,
                    updated_at timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (team_id, key_id, key_fingerprint)
                )
                """,
                """
                COMMENT ON TABLE push.apns_provider_tokens IS
                    'The APNs provider token (JWT) in force per signing key, shared by every apns-sender process; sealed with PUSH_CREDENTIALS_KEY. Sender state, not a projection'
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
                "ALTER TABLE push.tracking_log ADD COLUMN broad_log_id integer",
                """
                UPDATE push.tracking_log SET broad_log_id = message_id::integer
                WHERE CASE WHEN message_id_form = 'decimal' THEN message_id::numeric BETWEEN 1 AND 2147483647 ELSE false END
                """,
                "CREATE INDEX tracking_log_broad_log_id ON push.tracking_log (broad_log_id) WHERE broad_log_id IS NOT NULL",
            ]),
        Migration(
            version: 9, name: "deleted apps",
            statements: [
                """
                CREATE TABLE push.deleted_apps (
                    app_id     uuid        PRIMARY KEY,
                    deleted_at timestamptz NOT NULL
                )
                """,
                """
                COMMENT ON TABLE push.deleted_apps IS
                    'Apps an AppDeleted removed, from push.catalog (the catalog projection): the senders fail such an app''s queued messages as app-deleted, and later definitions of it are ignored'
                """,
                """
                CREATE TABLE push.subscription_deleted_apps (
                    app_id     uuid        PRIMARY KEY,
                    deleted_at timestamptz NOT NULL
                )
                """,
                """
                COMMENT ON TABLE push.subscription_deleted_apps IS
                    'Apps whose AppDeleted the subscriptions projection applied (it reads push.catalog too): their rows of push.subscriptions are deleted and later registrations of them ignored, in whatever order the two topics are read'
                """,
            ]),
        Migration(
            version: 10, name: "quarantine counted from when the channel disabled the device",
            statements: [
                "ALTER TABLE push.subscriptions ADD COLUMN invalid_since timestamptz",
                // Rows disabled so far hold the provider's time in disabled_at; the projection set
                // updated_at when it disabled them, which is the time the purge counts from now.
                "UPDATE push.subscriptions SET invalid_since = disabled_at, disabled_at = updated_at WHERE disabled",
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
            version: 13, name: "credentials sealed under a key ring: the sealing key's id per row",
            statements: [
                // NULL: sealed before key ids were recorded; opened by trying every configured key
                // until pushctl credentials reseal writes the current key's id.
                "ALTER TABLE push.app_credentials ADD COLUMN sealing_key_id text",
                "ALTER TABLE push.apns_provider_tokens ADD COLUMN sealing_key_id text",
                """
                COMMENT ON COLUMN push.app_credentials.sealing_key_id IS
                    'Id of the credentials key that sealed ciphertext (CredentialKey.id); NULL: sealed before migration 13'
                """,
                """
                COMMENT ON COLUMN push.apns_provider_tokens.sealing_key_id IS
                    'Id of the credentials key that sealed sealed_token (CredentialKey.id); NULL: sealed before migration 13'
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
                """
                CREATE TABLE push.templates (
                    service_id uuid        NOT NULL,
                    name       text        NOT NULL,
                    version    integer     NOT NULL CHECK (version >= 1),
                    content    jsonb       NOT NULL,
                    defined_at timestamptz NOT NULL,
                    PRIMARY KEY (service_id, name, version)
                )
                """,
                """
                COMMENT ON TABLE push.templates IS
                    'Versions of the services'' message templates, from push.catalog (TemplateDefined, the catalog projection); a delivery request names one'
                """,
                "ALTER TABLE push.deliveries ADD COLUMN template_name text, ADD COLUMN template_version integer",
            ]),
        Migration(
            version: 16, name: "unsubscribed devices",
            statements: [
                "ALTER TABLE push.subscriptions ADD COLUMN unsubscribed_at timestamptz",
                """
                COMMENT ON COLUMN push.subscriptions.unsubscribed_at IS
                    'When an operator unsubscribed the device (SubscriptionUnsubscribed); NULL: subscribed. Excluded from deliveries (exclusion_log reason unsubscribed); a re-registration keeps it'
                """,
            ]),
        Migration(
            version: 17, name: "erasure: per-person data keys, erased devices, token digests",
            statements: [
                """
                CREATE TABLE push.subject_keys (
                    subject_id uuid        PRIMARY KEY,
                    service_id uuid        NOT NULL,
                    subject    text        NOT NULL,
                    data_key   bytea       NOT NULL CHECK (octet_length(data_key) = 32),
                    created_at timestamptz NOT NULL DEFAULT now(),
                    UNIQUE (service_id, subject)
                )
                """,
                """
                COMMENT ON TABLE push.subject_keys IS
                    'Data keys sealing the personal fields of SubscriptionRegistered v2, one per person (subject user:<userKey>) or anonymous device (device:<appId>:<tokenDigest>) of a service. Not a projection: a replay cannot rebuild it, back it up with the database. Erasure deletes the row, which makes the person''s events unreadable for good'
                """,
                """
                CREATE TABLE push.erased_devices (
                    app_id       uuid        NOT NULL,
                    token_digest text        NOT NULL,
                    erased_at    timestamptz NOT NULL,
                    PRIMARY KEY (app_id, token_digest)
                )
                """,
                """
                COMMENT ON TABLE push.erased_devices IS
                    'Devices erased (SHA-256 of the token): the subscription projection ignores their registrations up to erased_at, also unsealed version-1 ones, so a replay does not bring them back. Not a projection: back it up with the database'
                """,
                // IMMUTABLE by declaration: convert_to is only STABLE (it reads the encoding name),
                // but a token's UTF-8 bytes never change, and a generated column needs it.
                """
                CREATE FUNCTION push.token_digest(token text) RETURNS text
                    LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
                    AS $$ SELECT encode(sha256(convert_to(token, 'UTF8')), 'hex') $$
                """,
                """
                COMMENT ON FUNCTION push.token_digest(text) IS
                    'Lowercase hex SHA-256 of a registration token''s UTF-8 bytes: how events name a device without its token'
                """,
                "ALTER TABLE push.subscriptions ADD COLUMN token_digest text GENERATED ALWAYS AS (push.token_digest(registration_token)) STORED",
                "CREATE INDEX subscriptions_token_digest ON push.subscriptions (app_id, token_digest)",
            ]),
        Migration(
            version: 18, name: "broad_log, exclusion_log and tracking_log partitioned by month",
            statements: LogPartitionsMigration.statements
        ),
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
            version: 21, name: "throttled deliveries' send timelines",
            statements: [
                """
                CREATE TABLE push.delivery_throttle (
                    delivery_id text        PRIMARY KEY,
                    next_slot   timestamptz NOT NULL,
                    per_second  integer     NOT NULL CHECK (per_second >= 1),
                    updated_at  timestamptz NOT NULL DEFAULT now()
                )
                """,
                """
                COMMENT ON TABLE push.delivery_throttle IS
                    'Sender state, not a projection: the first send slot no sender instance has taken yet for each throttled delivery; a sender moves next_slot forward by a batch of slots per statement, so throttle.perSecond holds across instances, both senders, restarts and retries'
                """,
            ]),
        // Versions 22 and 23 were taken by work on sealing that landed as other migrations.
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
            version: 28, name: "subscriptions by token digest carry the token (index-only probes)",
            statements: [
                // The broad log's projection takes a sealed message's token from its subscription by
                // digest, once per message: with the token in the index the probe reads no table page.
                "CREATE INDEX subscriptions_device_token ON push.subscriptions (app_id, token_digest) INCLUDE (registration_token)",
                "DROP INDEX push.subscriptions_token_digest",
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
                LogPartitionsMigration.createPartitionFunction(replacing: true, broadLogFillfactor: BroadLogStorage.fillfactor),
                // Partitions that exist take the setting for the pages they add from now on.
                """
                DO $$
                DECLARE part regclass;
                BEGIN
                    FOR part IN SELECT inhrelid::regclass FROM pg_inherits WHERE inhparent = 'push.broad_log'::regclass LOOP
                        EXECUTE format('ALTER TABLE %s SET (fillfactor = \(BroadLogStorage.fillfactor))', part);
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
    ]
}

/// How `push.broad_log`'s partitions were stored from migration 29 to migration 30.
package enum BroadLogStorage {
    /// Per cent of each page migration 29 filled with new rows: the other half took the final
    /// versions of the page's pending rows, so a result's update was a heap-only tuple. Since
    /// migration 30 rows are written once and pages are filled (docs/database.md).
    package static let fillfactor = 50
}
