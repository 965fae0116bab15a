-- The same table as Schema/sqlite/0029_serve_instances.sql: one row per running `serve` process
-- and the key ids of the keyring it holds, so that `keys reseal` never moves a value out of its reach.
CREATE TABLE serve_instances (
    instance_id TEXT COLLATE "C" PRIMARY KEY,
    host TEXT COLLATE "C" NOT NULL,
    pid BIGINT NOT NULL,
    listen TEXT COLLATE "C" NOT NULL,
    key_ids TEXT COLLATE "C" NOT NULL,
    started_at BIGINT NOT NULL,
    seen_at BIGINT NOT NULL
);
