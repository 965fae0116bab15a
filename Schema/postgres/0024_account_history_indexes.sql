-- The same indexes as Schema/sqlite/0024_account_history_indexes.sql: an account's open upgrades
-- and open password changes only, in the order the engine reads them, so these reads on every
-- upgrade's path cost what they return, however many ended flows the account has.
CREATE INDEX upgrade_sessions_account_open ON upgrade_sessions (account_id, created_at, id)
    WHERE status IN ('started', 'stepUpRequired', 'awaitingAppleCredential', 'converting');
CREATE INDEX password_changes_account_open ON password_changes (account_id, created_at, id)
    WHERE status IN ('started', 'stepUpRequired');
