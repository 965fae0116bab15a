-- One row per running `serve` process (docs/architecture.md §10.4, "Which keyrings are running"):
-- the ids of the keyring it holds, newest first and comma-separated (never a key), written at start,
-- on every reload and every 10 seconds, and deleted when it stops. `keys reseal` refuses to move
-- values under a key that an instance seen in the last 35 seconds cannot open; `keys status` lists
-- them. A row not seen for a day (a process killed) is deleted by the next instance's heartbeat.
CREATE TABLE serve_instances (
    instance_id TEXT PRIMARY KEY,
    host TEXT NOT NULL,
    pid INTEGER NOT NULL,
    listen TEXT NOT NULL,
    key_ids TEXT NOT NULL,
    started_at INTEGER NOT NULL,
    seen_at INTEGER NOT NULL
) WITHOUT ROWID;
