-- SQLite's migration 4 stops taking audit ids from a second table. PostgreSQL's ids come from the
-- identity sequence of migration 1; this states the one property they rely on. With a sequence cache
-- above 1, each connection would take ids from a block of its own, and a row inserted later on one
-- connection could get a smaller id than a row inserted earlier on another.
ALTER TABLE audit_events ALTER COLUMN id SET CACHE 1;
