-- The same table as Schema/sqlite/0026_console_sessions.sql: the support console's sessions, by the
-- SHA-256 (hex) of the session id, with the signed-in admin token's name and fingerprint, never the
-- id, the token or the form token.
CREATE TABLE console_sessions (
    session_hash TEXT COLLATE "C" PRIMARY KEY,
    token_name TEXT COLLATE "C" NOT NULL,
    token_fingerprint TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);
CREATE INDEX console_sessions_expiry ON console_sessions (expires_at);
