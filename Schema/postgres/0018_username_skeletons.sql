-- The same columns, indexes and table as Schema/sqlite/0018_username_skeletons.sql: each account's
-- confusable skeleton (UTS #39), filled by applying this migration and computed again by
-- `db migrate` when the ICU release recorded in `username_skeleton_source` changes; accounts that
-- shared a skeleton then are marked `username_skeleton_shared` and left for an operator, every
-- other account is held to a skeleton of its own by the partial unique index.
ALTER TABLE accounts ADD COLUMN username_skeleton TEXT COLLATE "C";
ALTER TABLE accounts ADD COLUMN username_skeleton_shared SMALLINT NOT NULL DEFAULT 0
    CHECK (username_skeleton_shared IN (0, 1));
CREATE INDEX accounts_by_username_skeleton ON accounts (username_skeleton);
CREATE UNIQUE INDEX accounts_username_skeleton_key ON accounts (username_skeleton)
    WHERE username_skeleton_shared = 0;
CREATE TABLE username_skeleton_source (
    id SMALLINT PRIMARY KEY CHECK (id = 1),
    version TEXT COLLATE "C" NOT NULL
);
