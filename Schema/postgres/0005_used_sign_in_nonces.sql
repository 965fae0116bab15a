-- Sign-in nonces already spent, by the SHA-256 (hex) of the nonce: a nonce signs in once. Issuing
-- one writes nothing (it is authenticated by an HMAC); only a nonce that came back inside a token
-- Apple signed is recorded, and only until it expires, after which it is refused as expired anyway.
CREATE TABLE used_sign_in_nonces (
    nonce_hash TEXT COLLATE "C" PRIMARY KEY,
    expires_at BIGINT NOT NULL
);
CREATE INDEX used_sign_in_nonces_expiry ON used_sign_in_nonces (expires_at);
