-- Deleting an account erases what names its person outside its own rows (docs/architecture.md §7.1).
--
-- The audit trail stays append-only but for one change: an UPDATE may replace values of the keys
-- that name a person (an Apple id, a username, an email address, a display name) in `detail` with
-- the marker '[redacted]', and nothing else: every other column, every other key and value, and the
-- set of keys stay as they were. Any other UPDATE, and every DELETE and TRUNCATE, is still refused
-- (SQLSTATE 23001, as before). The check runs for each row, so it replaces the statement trigger.
CREATE FUNCTION audit_events_redaction_only() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    old_detail jsonb;
    new_detail jsonb;
BEGIN
    IF NEW.id IS DISTINCT FROM OLD.id OR NEW.at IS DISTINCT FROM OLD.at
        OR NEW.account_id IS DISTINCT FROM OLD.account_id OR NEW.upgrade_id IS DISTINCT FROM OLD.upgrade_id
        OR NEW.event IS DISTINCT FROM OLD.event OR NEW.from_status IS DISTINCT FROM OLD.from_status
        OR NEW.to_status IS DISTINCT FROM OLD.to_status
    THEN
        RAISE EXCEPTION 'audit_events is append-only' USING ERRCODE = 'restrict_violation';
    END IF;
    BEGIN
        old_detail := OLD.detail::jsonb;
        new_detail := NEW.detail::jsonb;
    EXCEPTION WHEN data_exception THEN
        RAISE EXCEPTION 'audit_events is append-only' USING ERRCODE = 'restrict_violation';
    END;
    IF jsonb_typeof(old_detail) IS DISTINCT FROM 'object' OR jsonb_typeof(new_detail) IS DISTINCT FROM 'object'
        OR EXISTS (
            SELECT 1 FROM jsonb_each(old_detail) AS o FULL JOIN jsonb_each(new_detail) AS n ON n.key = o.key
            WHERE o.key IS NULL OR n.key IS NULL
                OR (
                    n.value <> o.value
                    AND NOT (
                        o.key IN ('sub', 'oldSub', 'newSub', 'transferSub', 'username', 'previous', 'email', 'displayName')
                        AND n.value = '"[redacted]"'::jsonb
                    )
                )
        )
    THEN
        RAISE EXCEPTION 'audit_events is append-only' USING ERRCODE = 'restrict_violation';
    END IF;
    RETURN NEW;
END
$$;

DROP TRIGGER audit_events_no_update ON audit_events;
CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
    FOR EACH ROW EXECUTE FUNCTION audit_events_redaction_only();

-- Rows of other accounts that name an Apple id in `detail` (an upgrade refused as a `sub-conflict`
-- names the `sub` of the account that holds it) are found by that id, without reading the trail.
-- Only rows that have one are indexed.
CREATE INDEX audit_events_sub ON audit_events (((detail::jsonb) ->> 'sub')) WHERE strpos(detail, '"sub":') > 0;

-- Upgrades and password changes asked for a username no account had keep the name as typed; they
-- are found by it when an account of that name is deleted. Only those rows are indexed.
CREATE INDEX upgrade_sessions_accountless ON upgrade_sessions (username_key) WHERE account_id IS NULL;
CREATE INDEX password_changes_accountless ON password_changes (username_key) WHERE account_id IS NULL;
