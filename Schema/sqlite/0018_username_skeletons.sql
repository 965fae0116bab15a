-- Look-alike usernames (UTS #39; docs/usernames.md). `username_skeleton` is the stored username's
-- confusable skeleton as ICU computes it: two usernames look alike when their skeletons are equal,
-- and a new account's must differ from every stored one. Applying this migration fills it for
-- every account in the same transaction (the data is ICU's, so no SQL can) and records in
-- `username_skeleton_source` the ICU release that computed them; ICU does not promise the same
-- skeletons from another release, so `db migrate` computes them all again when that changes. NULL
-- only in a row written around the store.
-- Accounts that already shared a skeleton when it was computed (created before this rule) have
-- `username_skeleton_shared = 1`: they are left for an operator (`db check` lists them), while the
-- partial unique index holds every other account to a skeleton of its own. Creating an account
-- also reads the skeleton in its transaction, so it is refused beside a shared one too.
ALTER TABLE accounts ADD COLUMN username_skeleton TEXT;
ALTER TABLE accounts ADD COLUMN username_skeleton_shared INTEGER NOT NULL DEFAULT 0
    CHECK (username_skeleton_shared IN (0, 1));
CREATE INDEX accounts_by_username_skeleton ON accounts (username_skeleton);
CREATE UNIQUE INDEX accounts_username_skeleton_key ON accounts (username_skeleton)
    WHERE username_skeleton_shared = 0;
CREATE TABLE username_skeleton_source (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version TEXT NOT NULL
);
