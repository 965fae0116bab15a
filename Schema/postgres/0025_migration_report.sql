-- The migration report (upgrade-cli report, GET /v1/admin/report; docs/architecture.md §12).
--
-- How a flow was entered: 'silent' (the extension's call without user interface), 'withUI' (its
-- call with one), 'ticket' (an in-app flow with a ticket); NULL when the client did not say, and for
-- flows begun before this migration. Every audit row of the flow's transitions repeats it in its
-- detail ('entry'), so the report counts outcomes by entry from the trail alone.
ALTER TABLE upgrade_sessions ADD COLUMN entry TEXT COLLATE "C";
ALTER TABLE password_changes ADD COLUMN entry TEXT COLLATE "C";
-- Accounts by credential kind, counted from the index alone (the report, and /metrics on every scrape).
CREATE INDEX accounts_credential_kind ON accounts (credential_kind);
-- The account events the report counts per day, found by type and time: the days after the window
-- are read too, to derive the accounts on passwords at the end of each day of it.
CREATE INDEX audit_events_account_changes ON audit_events (event, at)
    WHERE event IN ('account.created', 'account.imported', 'account.provisioned', 'account.convertedToApple', 'account.deleted');
-- The median time from start to completion: the completed flows of the window, by completion time.
CREATE INDEX upgrade_sessions_completed ON upgrade_sessions (updated_at, created_at) WHERE status = 'completed';
CREATE INDEX password_changes_completed ON password_changes (updated_at, created_at) WHERE status = 'completed';
