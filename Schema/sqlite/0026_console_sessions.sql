-- The support console's sessions (docs/architecture.md §7.8), shared by every server on the
-- database, so a member of staff stays signed in whichever instance answers, and across restarts.
-- A row is keyed by the SHA-256 (hex) of the session's 256-bit id, never the id, and names the admin
-- token signed in with by its name and a fingerprint (HMAC-SHA256 under the token's stored hash of its
-- name, scopes, creation time and expiry and of the row's key, start and end), never the token: the
-- console compares both with the token file on every request. The form token is derived from the id
-- and stored nowhere, so nothing here lets a reader of the database use a session, and a writer
-- without the token file can neither make a row nor lengthen one. Expired rows are refused, and
-- deleted a bounded number at a time at each sign-in.
CREATE TABLE console_sessions (
    session_hash TEXT PRIMARY KEY,
    token_name TEXT NOT NULL,
    token_fingerprint TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
