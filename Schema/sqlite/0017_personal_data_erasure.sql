-- Deleting an account erases what names its person outside its own rows (docs/architecture.md §7.1).
--
-- The audit trail stays append-only but for one change: an UPDATE may replace values of the keys
-- that name a person (an Apple id, a username, an email address, a display name) in `detail` with
-- the marker '[redacted]', and nothing else: every other column, every other key and value, and the
-- set of keys stay as they were. Any other UPDATE, and every DELETE, is still refused.
DROP TRIGGER audit_events_no_update;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
WHEN NOT (
    NEW.id IS OLD.id AND NEW.at IS OLD.at AND NEW.account_id IS OLD.account_id
    AND NEW.upgrade_id IS OLD.upgrade_id AND NEW.event IS OLD.event
    AND NEW.from_status IS OLD.from_status AND NEW.to_status IS OLD.to_status
    AND json_valid(OLD.detail) AND json_valid(NEW.detail)
    AND json_type(OLD.detail) = 'object' AND json_type(NEW.detail) = 'object'
    AND (SELECT count(*) FROM json_each(NEW.detail)) = (SELECT count(*) FROM json_each(OLD.detail))
    AND NOT EXISTS (
        SELECT 1 FROM json_each(OLD.detail) AS o
        WHERE NOT EXISTS (
            SELECT 1 FROM json_each(NEW.detail) AS n
            WHERE n.key = o.key AND (
                (n.type = o.type AND n.value IS o.value)
                OR (
                    o.key IN ('sub', 'oldSub', 'newSub', 'transferSub', 'username', 'previous', 'email', 'displayName')
                    AND n.type = 'text' AND n.value = '[redacted]'
                )
            )
        )
    )
)
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;

-- Rows of other accounts that name an Apple id in `detail` (an upgrade refused as a `sub-conflict`
-- names the `sub` of the account that holds it) are found by that id, without reading the trail.
-- Only rows that have one are indexed.
CREATE INDEX audit_events_sub ON audit_events (json_extract(detail, '$.sub'))
    WHERE instr(detail, '"sub":') > 0 AND json_valid(detail);

-- Upgrades and password changes asked for a username no account had keep the name as typed; they
-- are found by it when an account of that name is deleted. Only those rows are indexed.
CREATE INDEX upgrade_sessions_accountless ON upgrade_sessions (username_key) WHERE account_id IS NULL;
CREATE INDEX password_changes_accountless ON password_changes (username_key) WHERE account_id IS NULL;
