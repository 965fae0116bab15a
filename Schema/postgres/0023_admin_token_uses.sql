-- The same table as Schema/sqlite/0023_admin_token_uses.sql: when each admin token (by name and
-- creation time) was last used, written by each server at most about once a minute per token.
CREATE TABLE admin_token_uses (
    name TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    last_used_at BIGINT NOT NULL,
    PRIMARY KEY (name, created_at)
);
