import PushStore

/// The migrations of the tables PushCredentials owns (docs/architecture.md, "Tables and their owners"):
/// the sealed provider secrets (`app_credentials`). `SchemaMigrations.all` (module PushSchema) assembles every owner's list into
/// the one ordered list `pushctl migrate` applies; a version that changed tables of several
/// owners has a part in each, applied together in one transaction. docs/database.md documents
/// the tables.
package enum CredentialsSchema {
    package static let migrations: [Migration] = [
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
            ]),
        Migration(
            version: 13, name: "credentials sealed under a key ring: the sealing key's id per row",
            statements: [
                // NULL: sealed before key ids were recorded; opened by trying every configured key
                // until pushctl credentials reseal writes the current key's id.
                "ALTER TABLE push.app_credentials ADD COLUMN sealing_key_id text",
                """
                COMMENT ON COLUMN push.app_credentials.sealing_key_id IS
                    'Id of the credentials key that sealed ciphertext (CredentialKey.id); NULL: sealed before migration 13'
                """,
            ]),
    ]
}
