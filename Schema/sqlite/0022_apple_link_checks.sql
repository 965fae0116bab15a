-- The daily check of each Apple link's refresh token (`grant_type=refresh_token`; Apple asks for at
-- most one a day; docs/architecture.md, "The Apple link check"). Only a link that is `linked` and
-- has a stored refresh token is checked; the two partial indexes hold those links only, so a link
-- that ends (revoked, deleted, transferred) or loses its token drops out of both by itself.
-- `check_due_at` is when the next check may start: NULL until a checker schedules the link (its
-- first check is scattered over the period by a hash of the account id), then the last check plus
-- the period, or a backoff after a failed one. A checker claims a due link in one conditional
-- UPDATE that sets `check_claim_token` and moves `check_due_at` to the claim's end, so of several
-- instances one checks it, and a checker that dies leaves it due again when the claim runs out.
-- `checked_at` is the last check Apple answered as valid; `check_failures` and `check_error` (a
-- short reason: an HTTP status, Apple's error code, never a token) describe failed checks since.
ALTER TABLE apple_links ADD COLUMN check_due_at INTEGER;
ALTER TABLE apple_links ADD COLUMN check_claim_token TEXT;
ALTER TABLE apple_links ADD COLUMN checked_at INTEGER;
ALTER TABLE apple_links ADD COLUMN check_failures INTEGER NOT NULL DEFAULT 0 CHECK (check_failures >= 0);
ALTER TABLE apple_links ADD COLUMN check_error TEXT;
CREATE INDEX apple_links_check_due ON apple_links (check_due_at)
    WHERE status = 'linked' AND refresh_token_ciphertext IS NOT NULL AND check_due_at IS NOT NULL;
CREATE INDEX apple_links_check_unscheduled ON apple_links (account_id)
    WHERE status = 'linked' AND refresh_token_ciphertext IS NOT NULL AND check_due_at IS NULL;
