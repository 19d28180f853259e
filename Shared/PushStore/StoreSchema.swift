/// The migrations of the tables PushStore owns (docs/architecture.md, "Tables and their owners"):
/// the shared bookkeeping of every service: projections' consumer offsets, the event journal,
/// the per-person data keys (`subject_keys`) and the log partitions' function. `SchemaMigrations.all` (module PushSchema) assembles every owner's list into
/// the one ordered list `pushctl migrate` applies; a version that changed tables of several
/// owners has a part in each, applied together in one transaction. docs/database.md documents
/// the tables.
package enum StoreSchema {
    package static let migrations: [Migration] = [
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
            ]),
        Migration(
            version: 18, name: "broad_log, exclusion_log and tracking_log partitioned by month",
            statements: LogPartitionsMigration.functionStatements
        ),
        Migration(
            version: 39, name: "named operators of the admin APIs and their personal tokens",
            statements: [
                """
                CREATE TABLE push.operators (
                    name       text        PRIMARY KEY,
                    role       text        NOT NULL CHECK (role IN ('admin', 'marketer', 'analyst', 'support', 'privacy')),
                    services   text[],
                    active     boolean     NOT NULL,
                    defined_at timestamptz NOT NULL
                )
                """,
                """
                COMMENT ON TABLE push.operators IS
                    'Named operators of the admin APIs (OperatorDefined on push.catalog): a role, the services it may act on (null: every service), and whether it is active. Not an analyst table'
                """,
                """
                CREATE TABLE push.operator_tokens (
                    token_id      uuid        PRIMARY KEY,
                    operator_name text        NOT NULL,
                    digest        text        NOT NULL,
                    expires_at    timestamptz NOT NULL,
                    issued_at     timestamptz NOT NULL,
                    revoked_at    timestamptz
                )
                """,
                "CREATE INDEX operator_tokens_operator ON push.operator_tokens (operator_name)",
                """
                COMMENT ON TABLE push.operator_tokens IS
                    'Personal API tokens of the operators (OperatorTokenIssued, OperatorTokenRevoked): the SHA-256 digest of each token''s secret part, never the token. Not an analyst table'
                """,
            ]),
        Migration(
            version: 41, name: "operators' console passwords and session tokens",
            statements: [
                "ALTER TABLE push.operators ADD COLUMN password_hash text, ADD COLUMN password_set_at timestamptz",
                """
                COMMENT ON COLUMN push.operators.password_hash IS
                    'bcrypt hash of the operator''s console password (OperatorPasswordSet); null: the operator cannot sign in to the console'
                """,
                "ALTER TABLE push.operator_tokens ADD COLUMN purpose text NOT NULL DEFAULT 'api' CHECK (purpose IN ('api', 'session'))",
                """
                COMMENT ON COLUMN push.operator_tokens.purpose IS
                    'api: a personal API token; session: a console sign-in, revoked at sign-out'
                """,
            ]),
        Migration(
            version: 42, name: "the event journal keeps token digests, not registration tokens",
            statements: [
                """
                UPDATE push.event_journal
                SET aggregate_key = substr(aggregate_key, 1, 37) || encode(sha256(convert_to(substr(aggregate_key, 38), 'UTF8')), 'hex')
                WHERE version = 1 AND substr(aggregate_key, 37, 1) = ':'
                  AND type IN ('SubscriptionRegistered', 'SubscriptionDisabled', 'SubscriptionReenabled', 'SubscriptionPurged',
                               'APNSMessagePlanned', 'FCMMessagePlanned')
                """,
                """
                COMMENT ON COLUMN push.event_journal.aggregate_key IS
                    'The envelope key; <appId>:<token> keys (version-1 records, unsealed messages) are kept as <appId>:<tokenDigest>'
                """,
            ]),
        Migration(
            version: 43, name: "data keys wrapped by a key-encryption key held outside the database",
            statements: [
                "ALTER TABLE push.subject_keys ADD COLUMN wrap_key_id text",
                "ALTER TABLE push.subject_keys DROP CONSTRAINT subject_keys_data_key_check",
                """
                ALTER TABLE push.subject_keys ADD CONSTRAINT subject_keys_data_key_check
                    CHECK ((wrap_key_id IS NULL AND octet_length(data_key) = 32) OR (wrap_key_id IS NOT NULL AND octet_length(data_key) = 60))
                """,
                """
                COMMENT ON COLUMN push.subject_keys.wrap_key_id IS
                    'Id of the key-encryption key (PUSH_DATA_KEYS_KEY) that wrapped data_key (AES-256-GCM, 60 bytes, bound to subject_id); null: data_key is the key itself (32 bytes)'
                """,
            ]),
    ]
}
