-- When each admin token was last used, shared by every server on the database, for
-- `upgrade-cli admin tokens list`. A token is named by its name and creation time (a token removed
-- and added again under its name is another token). Each server writes a token's row at most about
-- once a minute (`AdminTokenUsage`), so this is not a write per request.
CREATE TABLE admin_token_uses (
    name TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    last_used_at INTEGER NOT NULL,
    PRIMARY KEY (name, created_at)
);
