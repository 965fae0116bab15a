-- One row per batch job that is running (`transfer prepare` for one target team, `transfer
-- complete`): a second run of the same job is refused while the row is live. The holder renews
-- `expires_at` on a heartbeat; a row whose holder died (kill -9, a lost host) expires and the next
-- run takes it over. `token` is known to the holder alone, so only it renews or releases the row;
-- `holder` is what a refused run prints (host, process id, run id). Times are Unix seconds.
CREATE TABLE job_leases (
    job TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    token TEXT NOT NULL,
    acquired_at INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    CHECK (expires_at >= heartbeat_at AND heartbeat_at >= acquired_at)
) WITHOUT ROWID;
