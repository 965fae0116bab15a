-- An account's open upgrades and open password changes, in the order the engine reads them
-- (`ORDER BY created_at, id`), and nothing else: each new upgrade or password change whose credential
-- was accepted ends the older open ones (docs/architecture.md §4.4), and a credential change ends
-- them all, so these reads are on every upgrade's path. Through `upgrade_sessions_account` they read
-- and sorted every past session of the account, ended ones included, and anyone who knows a
-- username can add past sessions; these partial indexes hold only the open rows (a row leaves when
-- its flow ends), so the reads cost what they return, however long the account's history. The
-- status lists match the queries' own, which is how SQLite and PostgreSQL know the index applies.
CREATE INDEX upgrade_sessions_account_open ON upgrade_sessions (account_id, created_at, id)
    WHERE status IN ('started', 'stepUpRequired', 'awaitingAppleCredential', 'converting');
CREATE INDEX password_changes_account_open ON password_changes (account_id, created_at, id)
    WHERE status IN ('started', 'stepUpRequired');
