-- Strong-password changes (POST /v1/password-changes): one row per change that reached a credential
-- check, updated by each transition of its machine (JSON in machine, as upgrade_sessions). The new
-- password is stored only as its argon2id PHC string, and only while the change is open (a TOTP step-up
-- between two requests); it is cleared when the change ends.
CREATE TABLE password_changes (
    id TEXT PRIMARY KEY,
    account_id TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    username_key TEXT NOT NULL,
    service_identifier TEXT NOT NULL,
    status TEXT NOT NULL,
    machine TEXT NOT NULL,
    new_password_hash TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX password_changes_account ON password_changes (account_id);
