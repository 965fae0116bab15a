-- The same table as Schema/sqlite/0027_key_checks.sql: one sealed check value per sealing key id,
-- so that a keyring listing an id with other key bytes is refused before it seals anything.
CREATE TABLE key_checks (
    key_id TEXT COLLATE "C" PRIMARY KEY,
    sealed BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
