-- Audit search (upgrade-cli audit, GET /v1/admin/audit) reads newest first by id, a page at a time
-- (id below the cursor). By account it already has (account_id, id). By event type it walks
-- (event, id) backwards from the cursor and stops after one page. A time window alone takes the
-- rows of the window from (at, id) and sorts them, instead of walking every newer row by id.
CREATE INDEX audit_events_event ON audit_events (event, id);
CREATE INDEX audit_events_at ON audit_events (at, id);
