#!/usr/bin/env python3
"""Writes hashes.json: stored-password fixtures for the PasswordVerifier and PasswordHasher tests.

Every hash comes from an implementation OTHER than the C library the verifier links for that format
(libxcrypt, libargon2, OpenSSL), so the tests compare two implementations instead of one with itself.
Where a second independent implementation exists, the generator cross-checks against it too.

    format            generator (primary)                        cross-check
    bcrypt $2a/$2b$   pyca/bcrypt (Rust)                         bcrypt.checkpw
    bcrypt $2y$       pyca/bcrypt $2b$, relabelled $2y$ (same    bcrypt.checkpw on the $2y$ string
                      algorithm, different identifier)
    argon2id/argon2i  argon2-cffi (reference C, own build)       argon2pure (pure Python)
    scrypt $scrypt$   passlib, builtin (pure Python) backend     hashlib.scrypt
    scrypt $7$        passlib, builtin backend, ident $7$        hashlib.scrypt
                      plus the published vector from the $7$ format description (unix-scrypt.txt)
    PBKDF2 (Django,   passlib django_pbkdf2_* / pbkdf2_*         pure-Python PBKDF2 below
    passlib ab64)
    sha512/sha256/    passlib, builtin (pure Python) backend     (none: os_crypt would be libxcrypt)
    md5-crypt
    yescrypt $y$      pyescrypt (Openwall's reference yescrypt,  (none: no other implementation
                      compiled into the package)                 exists; libxcrypt's is the same
                                                                 upstream code, built separately)
    phpass $P$ $H$    passlib phpass (pure Python)               phpass_reference below (hashlib)
    Drupal 7 $S$      drupal7_reference below, written from      (none: passlib has no Drupal 7
                      Drupal's password.inc (hashlib)            handler)
    Django            Django's hashers as Django writes them:    bcrypt.checkpw / argon2-cffi verify
    bcrypt_sha256$,   pyca/bcrypt of the hex SHA-256; argon2-
    argon2$           cffi hash_secret with Django's prefix

The PasswordHasher vectors are argon2-cffi hashes with a FIXED salt: the tests hash the same password
and salt and must produce the identical PHC string.

Requirements: pip install passlib bcrypt argon2-cffi argon2pure pyescrypt
Run from anywhere: python3 Tests/Fixtures/passwords/generate.py
Salts are random, so each run writes different (equally valid) hashes.
"""

import base64
import hashlib
import hmac
import json
import os
import warnings

import argon2
import argon2.low_level
import argon2pure
import bcrypt
import pyescrypt
from passlib import hash as ph
from passlib.utils import h64

warnings.filterwarnings("ignore")  # passlib warns that its pure-Python backends are slow; we want them.

# A few passwords: plain ASCII, non-ASCII with a 4-byte UTF-8 scalar, empty, and the characters
# hash formats use as separators. The tests never print them.
PASSWORDS = [
    "correct horse battery staple",
    "p\u00e4ssw\u00f6rd \u00fcn\u00efc\u00f8d\u00e9 \U0001f511",
    "",
    "pa$$:word,\"'\\ ",
]

fixtures = []


def add(fmt, scheme, password, encoded, generator, also_verifies=(), note=None):
    entry = {
        "format": fmt,
        "scheme": scheme,
        "password": password,
        "hash": encoded,
        "generator": generator,
    }
    if also_verifies:
        entry["alsoVerifies"] = list(also_verifies)
    if note:
        entry["note"] = note
    fixtures.append(entry)


# --- bcrypt (pyca/bcrypt, a Rust implementation; the verifier uses libxcrypt) -----------------------
for i, pw in enumerate(PASSWORDS):
    raw = pw.encode()
    h = bcrypt.hashpw(raw, bcrypt.gensalt(4 + i % 2, prefix=b"2b")).decode()
    assert bcrypt.checkpw(raw, h.encode())
    add("bcrypt", "$2b$", pw, h, "pyca/bcrypt %s hashpw" % bcrypt.__version__)

    h = bcrypt.hashpw(raw, bcrypt.gensalt(4, prefix=b"2a")).decode()
    assert bcrypt.checkpw(raw, h.encode())
    add("bcrypt", "$2a$", pw, h, "pyca/bcrypt %s hashpw, prefix 2a" % bcrypt.__version__)

    h = "$2y$" + bcrypt.hashpw(raw, bcrypt.gensalt(4, prefix=b"2b")).decode()[4:]
    assert bcrypt.checkpw(raw, h.encode())
    add("bcrypt", "$2y$", pw, h, "pyca/bcrypt %s hashpw $2b$ relabelled $2y$ (same algorithm)" % bcrypt.__version__)

# bcrypt only ever reads the first 72 bytes. pyca/bcrypt 5 refuses longer input, so the hash is made
# from the 72-byte prefix; every other implementation (OpenBSD, libxcrypt) truncates silently, and a
# stored hash of a long password verifies with the full password and with its prefix alike.
long_pw = "0123456789" * 10
h = bcrypt.hashpw(long_pw.encode()[:72], bcrypt.gensalt(4)).decode()
add(
    "bcrypt",
    "$2b$",
    long_pw,
    h,
    "pyca/bcrypt %s hashpw of the first 72 bytes" % bcrypt.__version__,
    also_verifies=[long_pw[:72]],
    note="bcrypt reads at most 72 bytes of the password",
)

# --- argon2 (argon2-cffi, checked against argon2pure) ------------------------------------------------
ARGON2_SETTINGS = [
    # (type, name, m KiB, t, p, version, salt bytes, hash bytes)
    (argon2.low_level.Type.ID, "argon2id", 1024, 1, 1, 19, 16, 32),
    (argon2.low_level.Type.ID, "argon2id", 2048, 2, 2, 19, 16, 32),
    (argon2.low_level.Type.I, "argon2i", 1024, 3, 1, 19, 16, 32),
    (argon2.low_level.Type.I, "argon2i", 1024, 2, 1, 16, 8, 24),
]
for i, pw in enumerate(PASSWORDS):
    for t_, name, m, t, p, v, salt_len, hash_len in ARGON2_SETTINGS if i < 2 else ARGON2_SETTINGS[:2]:
        salt = os.urandom(salt_len)
        h = argon2.low_level.hash_secret(pw.encode(), salt, t, m, p, hash_len, t_, v).decode()
        raw = argon2.low_level.hash_secret_raw(pw.encode(), salt, t, m, p, hash_len, t_, v)
        code = argon2pure.ARGON2ID if name == "argon2id" else argon2pure.ARGON2I
        assert argon2pure.argon2(pw.encode(), salt, t, m, p, hash_len, type_code=code, version=v) == raw
        add(name, "$%s$" % name, pw, h, "argon2-cffi %s hash_secret (checked with argon2pure)" % argon2.__version__)

# --- scrypt ----------------------------------------------------------------------------------------
ph.scrypt.set_backend("builtin")
for i, pw in enumerate(PASSWORDS):
    h = ph.scrypt.using(rounds=4 + i, block_size=8, parallelism=1 + i % 2).hash(pw)
    parsed = ph.scrypt.from_string(h)
    assert hashlib.scrypt(
        pw.encode(), salt=parsed.salt, n=1 << parsed.rounds, r=8, p=parsed.parallelism, dklen=32
    ) == parsed.checksum
    add("scrypt", "$scrypt$", pw, h, "passlib 1.7.4 scrypt, builtin backend (checked with hashlib.scrypt)")

    # passlib's $7$ salts are base64 with '+' and '/': libxcrypt's $7$ refuses '+', the format allows it.
    h = ph.scrypt.using(ident="$7$", rounds=6 + i, block_size=4 + i, parallelism=1).hash(pw)
    parsed = ph.scrypt.from_string(h)
    assert hashlib.scrypt(
        pw.encode(), salt=parsed.salt, n=1 << parsed.rounds, r=parsed.block_size, p=1, dklen=32
    ) == parsed.checksum
    add("scrypt", "$7$", pw, h, "passlib 1.7.4 scrypt ident $7$, builtin backend (checked with hashlib.scrypt)")

# A salt that certainly contains '+', the case libxcrypt cannot verify.
h = ph.scrypt.using(ident="$7$", rounds=6, block_size=8, salt=b"ab+cd/ef+gh").hash(PASSWORDS[0])
assert "+" in h.split("$")[2]
add("scrypt", "$7$", PASSWORDS[0], h, "passlib 1.7.4 scrypt ident $7$, salt with '+'")
# The published example of the $7$ format (password "pleaseletmein", N=2^14, r=8, p=1).
vector = "$7$C6..../....SodiumChloride$kBGj9fHznVYFQMEn/qDCfrDevf9YDtcDdKvEqHJLV8D"
assert h64.encode_bytes(
    hashlib.scrypt(b"pleaseletmein", salt=b"SodiumChloride", n=1 << 14, r=8, p=1, dklen=32)
).decode() == vector.split("$")[-1]
add("scrypt", "$7$", "pleaseletmein", vector, "published $7$ example (unix-scrypt.txt), checked with hashlib.scrypt")


# --- PBKDF2 (passlib; cross-checked with a PBKDF2 written out here from the RFC 8018 definition) ------
def pbkdf2_reference(name, password, salt, iterations, length):
    def prf(data):
        return hmac.new(password, data, name).digest()

    out = b""
    block = 1
    while len(out) < length:
        u = prf(salt + block.to_bytes(4, "big"))
        acc = int.from_bytes(u, "big")
        for _ in range(iterations - 1):
            u = prf(u)
            acc ^= int.from_bytes(u, "big")
        out += acc.to_bytes(len(u), "big")
        block += 1
    return out[:length]


PBKDF2 = [
    ("pbkdf2-sha256", "pbkdf2_sha256$", ph.django_pbkdf2_sha256, "sha256", 32),
    ("pbkdf2-sha1", "pbkdf2_sha1$", ph.django_pbkdf2_sha1, "sha1", 20),
    ("pbkdf2-sha1", "$pbkdf2$", ph.pbkdf2_sha1, "sha1", 20),
    ("pbkdf2-sha256", "$pbkdf2-sha256$", ph.pbkdf2_sha256, "sha256", 32),
    ("pbkdf2-sha512", "$pbkdf2-sha512$", ph.pbkdf2_sha512, "sha512", 64),
]
for i, pw in enumerate(PASSWORDS):
    for fmt, scheme, handler, digest, size in PBKDF2:
        rounds = 1000 + 250 * i
        h = handler.using(rounds=rounds).hash(pw)
        parsed = handler.from_string(h)
        salt = parsed.salt if isinstance(parsed.salt, bytes) else parsed.salt.encode()
        checksum = parsed.checksum
        if not scheme.startswith("$"):  # Django: the checksum is still padded base64 text
            checksum = base64.b64decode(checksum)
        assert pbkdf2_reference(digest, pw.encode(), salt, rounds, size) == checksum
        add(fmt, scheme, pw, h, "passlib 1.7.4 %s (checked with a reference PBKDF2)" % handler.name)

# --- sha-crypt and md5-crypt (passlib's pure-Python implementations) --------------------------------
for handler in (ph.sha512_crypt, ph.sha256_crypt, ph.md5_crypt):
    handler.set_backend("builtin")
for i, pw in enumerate(PASSWORDS):
    h = ph.sha512_crypt.using(rounds=1000 + 500 * i).hash(pw)
    add("sha512-crypt", "$6$", pw, h, "passlib 1.7.4 sha512_crypt, builtin backend")
    h = ph.sha256_crypt.using(rounds=1000 + 500 * i).hash(pw)
    add("sha256-crypt", "$5$", pw, h, "passlib 1.7.4 sha256_crypt, builtin backend")
    h = ph.md5_crypt.hash(pw)
    add("md5-crypt", "$1$", pw, h, "passlib 1.7.4 md5_crypt, builtin backend")
# The default round count (5000) is implicit: no rounds= field.
h = ph.sha512_crypt.using(rounds=5000).hash(PASSWORDS[1])
assert "rounds=" not in h
add("sha512-crypt", "$6$", PASSWORDS[1], h, "passlib 1.7.4 sha512_crypt, builtin backend, implicit rounds")
h = ph.sha256_crypt.using(rounds=5000).hash(PASSWORDS[0])
assert "rounds=" not in h
add("sha256-crypt", "$5$", PASSWORDS[0], h, "passlib 1.7.4 sha256_crypt, builtin backend, implicit rounds")

# --- yescrypt (pyescrypt: Openwall's reference code) ------------------------------------------------
for i, pw in enumerate(PASSWORDS):
    hasher = pyescrypt.Yescrypt(n=2 ** (10 + i % 2), r=8, t=i % 2, p=1, mode=pyescrypt.Mode.MCF)
    h = hasher.digest(pw.encode(), salt=os.urandom(16)).decode()
    hasher.compare(pw.encode(), h.encode())
    add("yescrypt", "$y$", pw, h, "pyescrypt 0.1.0 (Openwall reference yescrypt)")
# Debian's default parameters (N=4096, r=32: 16 MiB).
hasher = pyescrypt.Yescrypt(n=2 ** 12, r=32, t=0, p=1, mode=pyescrypt.Mode.MCF)
h = hasher.digest(PASSWORDS[0].encode(), salt=os.urandom(16)).decode()
assert h.startswith("$y$j9T$")
add("yescrypt", "$y$", PASSWORDS[0], h, "pyescrypt 0.1.0, Debian default parameters")


# --- LDAP RFC 2307 values (hashlib; the verifier uses OpenSSL) ----------------------------------------
# {SSHA*} is base64(digest(password + salt) + salt); {CRYPT} wraps a crypt(3) string already above.


def ldap_fixtures(existing):
    out = []
    for i, pw in enumerate(PASSWORDS[:2]):
        for scheme, name, fmt, salt_len in [
            ("{SSHA}", "sha1", "ldap-ssha", 4),
            ("{SSHA256}", "sha256", "ldap-ssha256", 8),
            ("{SSHA512}", "sha512", "ldap-ssha512", 16),
        ]:
            salt = os.urandom(salt_len + i)
            digest = hashlib.new(name, pw.encode() + salt).digest()
            h = scheme + base64.b64encode(digest + salt).decode()
            out.append((fmt, scheme, pw, h, "hashlib %s, %d-byte salt" % (name, len(salt))))
    for inner in ("$6$", "$1$", "$2b$", "$y$"):
        e = next(e for e in existing if e["scheme"] == inner and e["password"] == PASSWORDS[0])
        out.append((e["format"], "{CRYPT}" + inner, e["password"], "{CRYPT}" + e["hash"], "{CRYPT} + " + e["generator"]))
    return out

for entry in ldap_fixtures(fixtures):
    add(*entry)

# --- phpass, Drupal 7, Django bcrypt_sha256 and argon2 (appended, so earlier entries keep their index) ---
ITOA64 = "./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"


def itoa64_encode(data):
    """phpass's encode64 (also Drupal's _password_base64_encode): little-endian groups of 3 bytes."""
    out = ""
    for i in range(0, len(data), 3):
        chunk = data[i : i + 3]
        value = int.from_bytes(chunk, "little")
        for position in range(len(chunk) + 1):
            out += ITOA64[(value >> (6 * position)) & 0x3F]
    return out


def phpass_reference(algorithm, password, setting):
    """phpass's crypt_private and Drupal 7's _password_crypt: the same loop, Drupal cuts to 55."""
    count = 1 << ITOA64.index(setting[3])
    salt = setting[4:12].encode()
    digest = hashlib.new(algorithm, salt + password).digest()
    for _ in range(count):
        digest = hashlib.new(algorithm, digest + password).digest()
    out = setting[:12] + itoa64_encode(digest)
    return out[:55] if algorithm == "sha512" else out


for i, pw in enumerate(PASSWORDS):
    for ident in ("$P$", "$H$"):
        rounds = 7 + (i + (ident == "$H$")) % 4
        h = ph.phpass.using(ident=ident, rounds=rounds).hash(pw)
        assert phpass_reference("md5", pw.encode(), h) == h
        add("phpass", ident, pw, h, "passlib 1.7.4 phpass, ident %s (checked with a reference phpass)" % ident)

for i, pw in enumerate(PASSWORDS):
    setting = "$S$" + ITOA64[7 + i % 3] + itoa64_encode(os.urandom(6))
    h = phpass_reference("sha512", pw.encode(), setting)
    assert len(h) == 55
    add("drupal7", "$S$", pw, h, "Drupal 7 password.inc _password_crypt, written with hashlib sha512")

for i, pw in enumerate(PASSWORDS):
    # django.contrib.auth.hashers.BCryptSHA256PasswordHasher.encode
    prehashed = hashlib.sha256(pw.encode()).hexdigest().encode()
    data = bcrypt.hashpw(prehashed, bcrypt.gensalt(4 + i % 2))
    h = "bcrypt_sha256$" + data.decode("ascii")
    assert bcrypt.checkpw(prehashed, data)
    add("bcrypt-sha256", "bcrypt_sha256$", pw, h, "Django BCryptSHA256PasswordHasher with pyca/bcrypt %s" % bcrypt.__version__)
# The prehash makes every byte count: a 100-byte password, whose 72-byte prefix must not verify.
h = "bcrypt_sha256$" + bcrypt.hashpw(hashlib.sha256(long_pw.encode()).hexdigest().encode(), bcrypt.gensalt(4)).decode()
add("bcrypt-sha256", "bcrypt_sha256$", long_pw, h, "Django BCryptSHA256PasswordHasher, 100-byte password")

for i, pw in enumerate(PASSWORDS):
    # django.contrib.auth.hashers.Argon2PasswordHasher.encode: argon2-cffi's PHC string after "argon2";
    # Django's salt is 22 random letters and digits, hashed as its ASCII bytes.
    salt = "".join(ITOA64[2 + b % 62] for b in os.urandom(22))
    m, t, p = (1024, 2, 8) if i % 2 == 0 else (2048, 1, 2)
    data = argon2.low_level.hash_secret(pw.encode(), salt.encode(), t, m, p, 32, argon2.low_level.Type.ID).decode()
    h = "argon2" + data
    assert argon2.PasswordHasher().verify(h[len("argon2"):], pw)
    add("argon2id", "argon2$argon2id$", pw, h, "Django Argon2PasswordHasher with argon2-cffi %s" % argon2.__version__)

# --- PasswordHasher vectors: argon2-cffi with a fixed salt -------------------------------------------
hasher_vectors = []
for pw, salt, m, t, p in [
    (PASSWORDS[0], bytes(range(16)), 19456, 2, 1),  # PasswordHasher.Parameters.default
    (PASSWORDS[1], bytes(range(100, 116)), 1024, 1, 2),
    ("", bytes(16), 8, 1, 1),
]:
    h = argon2.low_level.hash_secret(pw.encode(), salt, t, m, p, 32, argon2.low_level.Type.ID).decode()
    assert argon2.PasswordHasher().verify(h, pw)
    hasher_vectors.append(
        {
            "password": pw,
            "saltHex": salt.hex(),
            "memoryKiB": m,
            "iterations": t,
            "parallelism": p,
            "hash": h,
            "generator": "argon2-cffi %s hash_secret" % argon2.__version__,
        }
    )

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hashes.json")
with open(out, "w") as f:
    json.dump({"fixtures": fixtures, "hasherVectors": hasher_vectors}, f, indent=1, ensure_ascii=True)
    f.write("\n")
print("%d fixtures, %d hasher vectors -> %s" % (len(fixtures), len(hasher_vectors), out))
