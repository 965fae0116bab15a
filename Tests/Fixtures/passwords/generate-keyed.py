#!/usr/bin/env python3
"""Writes keyed-hashes.json: fixtures for the hash formats whose parameters are the project's, not
the hash's: Firebase's modified scrypt and keyed HMAC-SHA256/512.

    format            generator                                   cross-check
    firebase-scrypt   PyPI firebase-scrypt (hashlib.scrypt +      the published sample of Firebase's
                      pycryptodome AES-CTR)                       own scrypt repository (README)
    hmac-sha256/512   Python's hmac and hashlib                   (none needed: HMAC is RFC 2104)

`parameterSets` are the sets by the id the hashes name (`p=<id>`), in the `--hash-parameters` file
shape plus their kind; each fixture also gives the hash in import form (without `p=`).

Requirements: pip install firebase-scrypt
Run from anywhere: python3 Tests/Fixtures/passwords/generate-keyed.py
Salts and keys are random (but for Firebase's sample), so each run writes different valid hashes.
"""

import base64
import hashlib
import hmac
import json
import os

import firebase_scrypt

PASSWORDS = [
    "correct horse battery staple",
    "p\u00e4ssw\u00f6rd \u00fcn\u00efc\u00f8d\u00e9 \U0001f511",
    "",
    "pa$$:word,\"'\\ ",
]


def b64(data):
    return base64.b64encode(data).decode()


# Firebase's published sample project (github.com/firebase/scrypt, README) and a cheaper second one.
FIREBASE_SAMPLE = {
    "signerKey": "jxspr8Ki0RYycVU8zykbdLGjFQ3McFUH0uiiTvC8pVMXAn210wjLNmdZJzxUECKbm0QsEmYUSDzZvpjeJ9WmXA==",
    "saltSeparator": "Bw==",
    "rounds": 8,
    "memCost": 14,
}
sets = {
    "1": dict(kind="firebase-scrypt", **FIREBASE_SAMPLE),
    "2": dict(kind="firebase-scrypt", signerKey=b64(os.urandom(64)), saltSeparator=b64(os.urandom(3)), rounds=2, memCost=10),
    "3": dict(kind="hmac", key=b64(os.urandom(32)), saltPosition="before"),
    "4": dict(kind="hmac", key=b64(os.urandom(20)), saltPosition="after"),
}
fixtures = []


def add(fmt, scheme, set_id, password, body, generator):
    fixtures.append(
        {
            "format": fmt,
            "scheme": scheme,
            "set": int(set_id),
            "password": password,
            "hash": "%sp=%s$%s" % (scheme, set_id, body),
            "importForm": scheme + body,
            "generator": generator,
        }
    )


# --- Firebase scrypt ------------------------------------------------------------------------------
sample_salt, sample_hash = "42xEC+ixf3L2lw==", (
    "lSrfV15cpx95/sZS2W9c9Kp6i/LVgQNDNC/qzrCnh1SAyZvqmZqAjTdn3aoItz+VHjoZilo78198JAdRuid5lQ=="
)
s = sets["1"]
assert firebase_scrypt.verify_password(
    "user1password", sample_hash, sample_salt, s["saltSeparator"], s["signerKey"], s["rounds"], s["memCost"]
)
add("firebase-scrypt", "$firebase-scrypt$", "1", "user1password", sample_salt + "$" + sample_hash,
    "Firebase's published sample (github.com/firebase/scrypt), checked with PyPI firebase-scrypt")

for i, pw in enumerate(PASSWORDS):
    set_id = "1" if i == 0 else "2"
    s = sets[set_id]
    salt = os.urandom(12 if i % 2 == 0 else 16)
    key = firebase_scrypt.generate_derived_key(pw, salt, s["saltSeparator"], s["rounds"], s["memCost"])
    h = b64(firebase_scrypt.encrypt(base64.b64decode(s["signerKey"]), key))
    assert firebase_scrypt.verify_password(pw, h, b64(salt), s["saltSeparator"], s["signerKey"], s["rounds"], s["memCost"])
    add("firebase-scrypt", "$firebase-scrypt$", set_id, pw, b64(salt) + "$" + h,
        "PyPI firebase-scrypt generate_derived_key + encrypt")

# --- keyed HMAC -----------------------------------------------------------------------------------
for i, pw in enumerate(PASSWORDS):
    for algorithm, scheme in (("sha256", "$hmac-sha256$"), ("sha512", "$hmac-sha512$")):
        set_id = "3" if i % 2 == 0 else "4"
        s = sets[set_id]
        key = base64.b64decode(s["key"])
        raw = pw.encode()
        # unsalted, lowercase hex
        d = hmac.new(key, raw, getattr(hashlib, algorithm)).hexdigest()
        add("hmac-" + algorithm, scheme, set_id, pw, d, "Python hmac.new(key, password, %s).hexdigest()" % algorithm)
        # salted, base64 (uppercase hex for the first password)
        salt = os.urandom(8 + i)
        message = salt + raw if s["saltPosition"] == "before" else raw + salt
        mac = hmac.new(key, message, getattr(hashlib, algorithm)).digest()
        digest = mac.hex().upper() if i == 0 else b64(mac)
        add("hmac-" + algorithm, scheme, set_id, pw, b64(salt) + "$" + digest,
            "Python hmac.new(key, salt %s password, %s)" % ("+" if s["saltPosition"] == "before" else "after", algorithm))

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "keyed-hashes.json")
with open(out, "w") as f:
    json.dump({"parameterSets": sets, "fixtures": fixtures}, f, indent=1, ensure_ascii=True)
    f.write("\n")
print("%d fixtures, %d parameter sets -> %s" % (len(fixtures), len(sets), out))
