-- The same tables as Schema/sqlite/0014_account_imports.sql: `account_profiles` holds what an
-- imported account brings besides its credentials and which import line wrote it last;
-- `import_runs` holds each import's progress, moved by every batch's transaction.
CREATE TABLE account_profiles (
    account_id TEXT COLLATE "C" PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    email TEXT COLLATE "C",
    display_name TEXT COLLATE "C",
    import_run TEXT COLLATE "C",
    import_line BIGINT,
    updated_at BIGINT NOT NULL
);

CREATE TABLE import_runs (
    id TEXT COLLATE "C" PRIMARY KEY,
    source TEXT COLLATE "C" NOT NULL,
    last_line BIGINT NOT NULL CHECK (last_line >= 0),
    created BIGINT NOT NULL DEFAULT 0,
    updated BIGINT NOT NULL DEFAULT 0,
    skipped BIGINT NOT NULL DEFAULT 0,
    failed BIGINT NOT NULL DEFAULT 0,
    started_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    finished_at BIGINT
);
