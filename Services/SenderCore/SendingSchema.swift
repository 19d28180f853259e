import PushStore

/// The migrations of the tables PushSending owns (docs/architecture.md, "Tables and their owners"):
/// the shared APNs provider tokens and the throttled deliveries' send timelines. `SchemaMigrations.all` (module PushSchema) assembles every owner's list into
/// the one ordered list `pushctl migrate` applies; a version that changed tables of several
/// owners has a part in each, applied together in one transaction. docs/database.md documents
/// the tables.
package enum SendingSchema {
    package static let migrations: [Migration] = [
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
            version: 13, name: "credentials sealed under a key ring: the sealing key's id per row",
            statements: [
                "ALTER TABLE push.apns_provider_tokens ADD COLUMN sealing_key_id text",
                """
                COMMENT ON COLUMN push.apns_provider_tokens.sealing_key_id IS
                    'Id of the credentials key that sealed sealed_token (CredentialKey.id); NULL: sealed before migration 13'
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
    ]
}
