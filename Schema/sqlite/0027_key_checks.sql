-- One check value per sealing key id (docs/architecture.md §10.4): a constant sealed under the key
-- the id names, written by the first server or `keys reseal` that seals under that key, and opened
-- by every later one. A key id names one key for good; a keyring that lists the id with other key
-- bytes cannot open the check and is refused before it seals anything another instance could not
-- open. The value is sealed like every other (AES-256-GCM, context `key-check:ID`): no key, and
-- nothing that helps find one, is stored.
CREATE TABLE key_checks (
    key_id TEXT PRIMARY KEY,
    sealed BLOB NOT NULL,
    created_at INTEGER NOT NULL
) WITHOUT ROWID;
