-- The project-wide parameters some imported hash formats need besides the hash itself: Firebase's
-- scrypt (signer key, salt separator, rounds, memory cost) and keyed HMAC digests (the key). Each
-- set is stored once, sealed with the server's secret key (context `hash-parameters:<id>`), and the
-- password hashes that need it name it by id (`$firebase-scrypt$p=<id>$...`, `$hmac-sha256$p=<id>$...`;
-- docs/architecture.md, Password hashes). A set is never deleted while a hash may name it.
CREATE TABLE hash_parameter_sets (
    id INTEGER PRIMARY KEY CHECK (id > 0),
    kind TEXT NOT NULL CHECK (kind IN ('firebase-scrypt', 'hmac')),
    sealed BLOB NOT NULL,
    created_at INTEGER NOT NULL
);
