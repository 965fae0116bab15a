-- Accounts imported or provisioned with `legacyPassword` hold a password row of format 'legacy' with
-- an empty hash until the legacy login system vouches for a password (docs/legacy-verification.md).
-- `/metrics` counts them on every scrape: a partial index keeps that count to the legacy rows alone.
CREATE INDEX password_credentials_legacy ON password_credentials (account_id) WHERE format = 'legacy';
