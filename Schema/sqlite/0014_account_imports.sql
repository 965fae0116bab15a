-- `accounts import`: what an imported account brings besides its credentials, and each import's
-- progress. `import_run` and `import_line` name the import (and its input line) that wrote the
-- account last, so a later line of the same file with the same username is reported as a duplicate
-- without keeping the file's usernames in memory.
CREATE TABLE account_profiles (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    email TEXT,
    display_name TEXT,
    import_run TEXT,
    import_line INTEGER,
    updated_at INTEGER NOT NULL
) WITHOUT ROWID;

-- One row per import, keyed by a hash of the input's identity and the arguments that change what a
-- row does. Every batch's transaction moves `last_line` (the last input line it covered) and the
-- counts, so a run killed at any point resumes after the last committed batch and writes no row twice.
CREATE TABLE import_runs (
    id TEXT PRIMARY KEY,
    source TEXT NOT NULL,
    last_line INTEGER NOT NULL CHECK (last_line >= 0),
    created INTEGER NOT NULL DEFAULT 0,
    updated INTEGER NOT NULL DEFAULT 0,
    skipped INTEGER NOT NULL DEFAULT 0,
    failed INTEGER NOT NULL DEFAULT 0,
    started_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    finished_at INTEGER
) WITHOUT ROWID;
