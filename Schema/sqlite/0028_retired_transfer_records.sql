-- Transfer records of earlier transfers (docs/apple-protocol.md §3.2, "A later transfer"). An account
-- has one live row in `transfer_records`; when the team that received the app moves it on (to a third
-- team, or back), `transfer prepare` moves the account's finished record here, in the transaction
-- that records the account's first step of the new transfer, and the account starts over from its
-- current Apple id. The row is copied as it was, so the earlier transfer's ids stay answerable: the
-- credential state of the id the account had before it (`transferred`), the audit trail's account
-- view, and the ids a deletion erases. A row is never changed; it goes with its account.
CREATE TABLE retired_transfer_records (
    id INTEGER PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id) ON DELETE CASCADE,
    status TEXT NOT NULL,
    machine TEXT NOT NULL,
    old_sub TEXT NOT NULL,
    transfer_sub TEXT,
    new_sub TEXT,
    target_team_id TEXT NOT NULL,
    failure_reason TEXT,
    attempts INTEGER NOT NULL,
    window_ends_at INTEGER,
    updated_at INTEGER NOT NULL,
    version INTEGER NOT NULL,
    retired_at INTEGER NOT NULL
);
-- An account's earlier transfers, oldest first.
CREATE INDEX retired_transfer_records_account ON retired_transfer_records (account_id, id);
-- `getCredentialState` for an id an earlier transfer moved away from. Not unique: an app moved
-- A -> B -> A -> B leaves the same id in two rows.
CREATE INDEX retired_transfer_records_old_sub ON retired_transfer_records (old_sub);
-- `transfer status`: the teams that received an app and have since moved it on.
CREATE INDEX retired_transfer_records_target ON retired_transfer_records (target_team_id, retired_at);
