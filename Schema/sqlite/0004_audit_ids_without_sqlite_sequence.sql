-- Audit ids no longer come from sqlite_sequence (AUTOINCREMENT). Rows are never deleted (the
-- triggers refuse it), so SQLite's largest-rowid-plus-one already gives strictly increasing ids,
-- and each audit row stops rewriting a page of a second table: a commit that writes an audit row
-- writes one page fewer (an upgrade writes about 23 pages instead of 26).
CREATE TABLE audit_events_rebuilt (
    id INTEGER PRIMARY KEY,
    at INTEGER NOT NULL,
    account_id TEXT,
    upgrade_id TEXT,
    event TEXT NOT NULL,
    from_status TEXT,
    to_status TEXT,
    detail TEXT NOT NULL DEFAULT '{}'
);
INSERT INTO audit_events_rebuilt (id, at, account_id, upgrade_id, event, from_status, to_status, detail)
    SELECT id, at, account_id, upgrade_id, event, from_status, to_status, detail FROM audit_events ORDER BY id;
-- Dropping the table drops its indexes, its triggers and its sqlite_sequence row.
DROP TABLE audit_events;
ALTER TABLE audit_events_rebuilt RENAME TO audit_events;
CREATE INDEX audit_events_account ON audit_events (account_id, id);
CREATE INDEX audit_events_upgrade ON audit_events (upgrade_id, id);

CREATE TRIGGER audit_events_no_update BEFORE UPDATE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;

CREATE TRIGGER audit_events_no_delete BEFORE DELETE ON audit_events
BEGIN
    SELECT RAISE(ABORT, 'audit_events is append-only');
END;
