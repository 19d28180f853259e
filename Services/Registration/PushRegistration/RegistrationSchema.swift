import PushStore

/// The migrations of the tables PushRegistration owns (docs/architecture.md, "Tables and their owners"):
/// the catalog (`services`, `apps`, `templates`, deleted apps), `subscriptions` and
/// `erased_devices`. `SchemaMigrations.all` (module PushSchema) assembles every owner's list into
/// the one ordered list `pushctl migrate` applies; a version that changed tables of several
/// owners has a part in each, applied together in one transaction. docs/database.md documents
/// the tables.
package enum RegistrationSchema {
    package static let migrations: [Migration] = [
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
                "ALTER TABLE push.apps ADD COLUMN credential_id uuid",
                "ALTER TABLE push.apps ADD COLUMN credential_kind text",
                "ALTER TABLE push.apps ADD COLUMN credential_fingerprint text",
                "ALTER TABLE push.apps ADD COLUMN credential_updated_at timestamptz",
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
            version: 28, name: "subscriptions by token digest carry the token (index-only probes)",
            statements: [
                // The broad log's projection takes a sealed message's token from its subscription by
                // digest, once per message: with the token in the index the probe reads no table page.
                "CREATE INDEX subscriptions_device_token ON push.subscriptions (app_id, token_digest) INCLUDE (registration_token)",
                "DROP INDEX push.subscriptions_token_digest",
            ]),
        Migration(
            version: 33, name: "the devices each data-key subject has registered, kept past a purge",
            statements: [
                """
                CREATE TABLE push.subject_devices (
                    subject_id   uuid        NOT NULL,
                    app_id       uuid        NOT NULL,
                    token_digest text        NOT NULL,
                    first_seen   timestamptz NOT NULL DEFAULT now(),
                    PRIMARY KEY (subject_id, app_id, token_digest)
                )
                """,
                """
                COMMENT ON TABLE push.subject_devices IS
                    'Each device (app, SHA-256 of the token) a subject (push.subject_keys.subject_id) registered, from the sealed registrations; kept when the subscription is purged or its app deleted, so an erasure still finds the device''s log rows. Erasure deletes the subject''s rows'
                """,
                // The devices registered so far, from the subscriptions and their subjects' keys.
                """
                INSERT INTO push.subject_devices (subject_id, app_id, token_digest)
                SELECT k.subject_id, s.app_id, s.token_digest
                FROM push.subscriptions s JOIN push.apps a USING (app_id)
                JOIN push.subject_keys k ON k.service_id = a.service_id
                 AND k.subject = CASE WHEN s.user_key = '' THEN 'device:' || s.app_id::text || ':' || s.token_digest ELSE 'user:' || s.user_key END
                ON CONFLICT DO NOTHING
                """,
            ]),
        Migration(
            version: 34, name: "audience segments",
            statements: [
                """
                CREATE TABLE push.segments (
                    service_id  uuid        NOT NULL,
                    name        text        NOT NULL,
                    version     integer     NOT NULL CHECK (version >= 1),
                    filter      jsonb       NOT NULL,
                    description text,
                    defined_at  timestamptz NOT NULL,
                    PRIMARY KEY (service_id, name, version)
                )
                """,
                """
                COMMENT ON TABLE push.segments IS
                    'Versions of the services'' named audiences (an audience.filter condition tree), from push.catalog (SegmentDefined, the catalog projection); a delivery request names one'
                """,
            ]),
        Migration(
            version: 36, name: "a service's frequency cap",
            statements: [
                """
                ALTER TABLE push.services
                    ADD COLUMN frequency_cap_messages integer,
                    ADD COLUMN frequency_cap_period_hours integer,
                    ADD CONSTRAINT services_frequency_cap CHECK (
                        (frequency_cap_messages IS NULL) = (frequency_cap_period_hours IS NULL)
                        AND (frequency_cap_messages IS NULL OR frequency_cap_messages BETWEEN 1 AND 1000)
                        AND (frequency_cap_period_hours IS NULL OR frequency_cap_period_hours BETWEEN 1 AND 720))
                """,
                """
                COMMENT ON COLUMN push.services.frequency_cap_messages IS
                    'At most this many bulk deliveries of the service per person (user key, or device without one) in any frequency_cap_period_hours; null: no cap (ServiceFrequencyCapSet)'
                """,
            ]),
        Migration(
            version: 40, name: "the admin APIs' audit trail",
            statements: [
                """
                CREATE TABLE push.audit_log (
                    audit_id      uuid        PRIMARY KEY,
                    recorded_at   timestamptz NOT NULL,
                    operator_name text        NOT NULL,
                    role          text        NOT NULL,
                    method        text        NOT NULL,
                    path          text        NOT NULL,
                    permission    text        NOT NULL,
                    status        integer     NOT NULL,
                    request_id    text        NOT NULL,
                    service       text
                )
                """,
                "CREATE INDEX audit_log_recorded_at ON push.audit_log (recorded_at)",
                "CREATE INDEX audit_log_operator ON push.audit_log (operator_name, recorded_at)",
                """
                COMMENT ON TABLE push.audit_log IS
                    'Who did what through the admin APIs (AdminActionRecorded on push.audit): every call by a known operator that changed something or read devices, allowed or refused, with the status answered. Never a body, a query, a secret or a token'
                """,
            ]),
    ]
}
