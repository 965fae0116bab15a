-- Apple refresh tokens of deleted accounts, queued for `/auth/revoke` (TN3194): the deletion inserts
-- a row in the transaction that deletes the account, and a sender revokes it later, retrying with
-- backoff until Apple answers 200 (docs/architecture.md). `token_ciphertext` is the link's sealed
-- refresh token as it was, opened with the deleted account's id (`account_id`, its sealing context);
-- it is emptied once the row is done. A sender claims a row by setting `claim_token` and
-- `claimed_until` in one conditional UPDATE; a claim that lapses lets another sender take it over.
-- `last_error` is a short reason (an HTTP status, Apple's error code), never a token.
CREATE TABLE apple_revocations (
    id TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C" NOT NULL,
    token_ciphertext BYTEA NOT NULL,
    client_id TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at BIGINT NOT NULL,
    claim_token TEXT COLLATE "C",
    claimed_until BIGINT,
    done_at BIGINT,
    last_error TEXT COLLATE "C"
);
CREATE INDEX apple_revocations_due ON apple_revocations (next_attempt_at) WHERE done_at IS NULL;
