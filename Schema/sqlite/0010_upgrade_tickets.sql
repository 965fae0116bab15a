-- One-time tickets for in-app upgrades, by the SHA-256 (hex) of the ticket: the app's backend mints
-- one for an account (POST /v1/upgrade-tickets), and one POST /v1/upgrades spends it in place of the
-- password. A ticket is bound to its account, used once (used_at), and refused from expires_at on;
-- expired rows are deleted when the next ticket is minted.
CREATE TABLE upgrade_tickets (
    ticket_hash TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    second_factor_verified INTEGER NOT NULL CHECK (second_factor_verified IN (0, 1)),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    used_at INTEGER
) WITHOUT ROWID;
CREATE INDEX upgrade_tickets_expiry ON upgrade_tickets (expires_at);
CREATE INDEX upgrade_tickets_account ON upgrade_tickets (account_id);
