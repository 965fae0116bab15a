-- Strong-password changes (POST /v1/password-changes): one row per change that reached a credential
-- check, updated by each transition of its machine (JSON in machine, as upgrade_sessions). The new
-- password is stored only as its argon2id PHC string, and only while the change is open (a TOTP step-up
-- between two requests); it is cleared when the change ends.
CREATE TABLE password_changes (
    id TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C" REFERENCES accounts (id) ON DELETE CASCADE,
    username_key TEXT COLLATE "C" NOT NULL,
    service_identifier TEXT COLLATE "C" NOT NULL,
    status TEXT COLLATE "C" NOT NULL,
    machine TEXT COLLATE "C" NOT NULL,
    new_password_hash TEXT COLLATE "C",
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    version BIGINT NOT NULL DEFAULT 1
);
CREATE INDEX password_changes_account ON password_changes (account_id);
