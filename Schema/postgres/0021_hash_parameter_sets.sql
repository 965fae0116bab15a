-- The same table as Schema/sqlite/0021_hash_parameter_sets.sql: project-wide parameters of Firebase
-- scrypt and keyed HMAC hashes, each set stored once, sealed, and named by id from the hashes.
CREATE TABLE hash_parameter_sets (
    id BIGINT PRIMARY KEY CHECK (id > 0),
    kind TEXT COLLATE "C" NOT NULL CHECK (kind IN ('firebase-scrypt', 'hmac')),
    sealed BYTEA NOT NULL,
    created_at BIGINT NOT NULL
);
