-- Accounts and their credentials. A password account becomes `appleOnly` when its upgrade completes:
-- the password row is deleted in the same transaction that links the Apple `sub`.
CREATE TABLE accounts (
    id TEXT PRIMARY KEY,
    username TEXT NOT NULL UNIQUE,
    credential_kind TEXT NOT NULL CHECK (credential_kind IN ('password', 'appleOnly')),
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);

CREATE TABLE password_credentials (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    hash TEXT NOT NULL,
    format TEXT NOT NULL,
    updated_at INTEGER NOT NULL
);

-- TOTP secrets are sealed with AES-256-GCM under UPGRADE_SECRET_KEY_FILE, bound to the account id.
CREATE TABLE totp_enrollments (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    secret_ciphertext BLOB NOT NULL,
    algorithm TEXT NOT NULL CHECK (algorithm IN ('SHA1', 'SHA256', 'SHA512')),
    digits INTEGER NOT NULL CHECK (digits IN (6, 8)),
    period INTEGER NOT NULL CHECK (period = 30),
    -- The last accepted time step: a code for this step or an earlier one is never accepted again.
    last_accepted_step INTEGER,
    created_at INTEGER NOT NULL
);

CREATE TABLE recovery_codes (
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    code_hash TEXT NOT NULL,
    used_at INTEGER,
    PRIMARY KEY (account_id, code_hash)
);

-- Failed password attempts, keyed by the username as typed (normalised), so unknown usernames are
-- throttled and locked exactly like known ones.
CREATE TABLE login_throttle (
    username_key TEXT PRIMARY KEY,
    failures INTEGER NOT NULL,
    last_failure_at INTEGER NOT NULL
);

-- An Apple `sub` belongs to at most one account: the UNIQUE constraint is what turns a second link
-- into a conflict instead of a merge.
CREATE TABLE apple_links (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    sub TEXT NOT NULL UNIQUE,
    team_id TEXT NOT NULL,
    client_id TEXT NOT NULL,
    email TEXT,
    is_private_email INTEGER,
    refresh_token_ciphertext BLOB,
    status TEXT NOT NULL CHECK (status IN ('linked', 'revoked', 'deleted', 'transferred')),
    linked_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);

-- One row per upgrade attempt. `machine` holds the state machine's persisted state; `version` is the
-- optimistic-concurrency counter: an update names the version it read and fails if another won.
CREATE TABLE upgrade_sessions (
    id TEXT PRIMARY KEY,
    account_id TEXT REFERENCES accounts (id) ON DELETE CASCADE,
    username_key TEXT NOT NULL,
    service_identifier TEXT NOT NULL,
    status TEXT NOT NULL,
    machine TEXT NOT NULL,
    state_hash TEXT,
    nonce_hash TEXT,
    linked_sub TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX upgrade_sessions_account ON upgrade_sessions (account_id);

-- Team-transfer migration, one row per Apple-linked account being moved.
CREATE TABLE transfer_records (
    account_id TEXT PRIMARY KEY REFERENCES accounts (id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    machine TEXT NOT NULL,
    old_sub TEXT NOT NULL,
    transfer_sub TEXT UNIQUE,
    new_sub TEXT,
    target_team_id TEXT NOT NULL,
    failure_reason TEXT,
    attempts INTEGER NOT NULL DEFAULT 0,
    window_ends_at INTEGER,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);

-- Append-only audit trail: no secrets, ever. Triggers refuse updates and deletes.
CREATE TABLE audit_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    at INTEGER NOT NULL,
    account_id TEXT,
    upgrade_id TEXT,
    event TEXT NOT NULL,
    from_status TEXT,
    to_status TEXT,
    detail TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_events_account ON audit_events (account_id, id);
CREATE INDEX audit_events_upgrade ON audit_events (upgrade_id, id);

CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;

CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
