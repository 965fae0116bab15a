-- One row per batch job that is running (`transfer prepare` for one target team, `transfer
-- complete`): a second run of the same job is refused while the row is live. The holder renews
-- `expires_at` on a heartbeat; a row whose holder died (kill -9, a lost host) expires and the next
-- run takes it over. `token` is known to the holder alone, so only it renews or releases the row;
-- `holder` is what a refused run prints (host, process id, run id). Times are Unix seconds.
CREATE TABLE job_leases (
    job TEXT COLLATE "C" PRIMARY KEY,
    holder TEXT COLLATE "C" NOT NULL,
    token TEXT COLLATE "C" NOT NULL,
    acquired_at BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    CHECK (expires_at >= heartbeat_at AND heartbeat_at >= acquired_at)
);
