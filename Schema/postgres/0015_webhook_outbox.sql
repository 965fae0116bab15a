-- Signed webhooks to the app's backend (Schema/webhooks.md): every change worth telling inserts a
-- row in the transaction that makes the change, and a sender in `serve` delivers it later, at least
-- once. `id` is the event's `webhook-id`, the same on every attempt and replay; `payload` is the
-- JSON body as it is signed and sent, built when the change committed and free of secrets (no
-- token, code or hash). `account_seq` orders one account's events (1, 2, ...; NULL without an
-- account): an event is not sent while an earlier one of its account is neither delivered nor
-- failed. A sender claims a row by setting `claim_token` and `claimed_until` in one conditional
-- UPDATE; a claim that lapses lets another sender take it over. `first_attempt_at` starts the retry
-- window (a replay clears it); `last_error` is a short reason (an HTTP status, a timeout).
CREATE TABLE webhook_outbox (
    id TEXT COLLATE "C" PRIMARY KEY,
    account_id TEXT COLLATE "C",
    account_seq BIGINT,
    type TEXT COLLATE "C" NOT NULL,
    payload TEXT COLLATE "C" NOT NULL,
    created_at BIGINT NOT NULL,
    attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    next_attempt_at BIGINT NOT NULL,
    first_attempt_at BIGINT,
    claim_token TEXT COLLATE "C",
    claimed_until BIGINT,
    delivered_at BIGINT,
    failed_at BIGINT,
    last_error TEXT COLLATE "C"
);
CREATE INDEX webhook_outbox_due ON webhook_outbox (next_attempt_at) WHERE delivered_at IS NULL AND failed_at IS NULL;
-- Numbering reads an account's largest sequence number.
CREATE INDEX webhook_outbox_account ON webhook_outbox (account_id, account_seq);
-- The claim asks, per candidate, whether its account has an earlier pending event: only pending
-- rows are indexed, so the answer is one probe however many delivered rows an account has.
CREATE INDEX webhook_outbox_account_pending ON webhook_outbox (account_id, account_seq)
    WHERE delivered_at IS NULL AND failed_at IS NULL;
CREATE INDEX webhook_outbox_created ON webhook_outbox (created_at);
