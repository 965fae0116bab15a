#!/usr/bin/env python3
"""Regenerates secretbox_vectors.json, secretbox_v2_vectors.json and recovery_code_hashes.json with Python's `cryptography` and
`hashlib`, implementations independent of ours, from the formats documented in SecretBox.swift and
RecoveryCodes.swift. All keys and codes are fixed test values. Run: python3 generate_cryptography.py"""
import hashlib
import json
import os

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

HERE = os.path.dirname(os.path.abspath(__file__))
VERSION = b"\x01"
DEV_DERIVATION = "siwa-upgrade INSECURE development-only secret box key v1"


def seal(key: bytes, nonce: bytes, context: str, plaintext: bytes) -> bytes:
    # Format v1: version || nonce || ciphertext || tag; AAD = version || UTF-8(context).
    aad = VERSION + context.encode("utf-8")
    return VERSION + nonce + AESGCM(key).encrypt(nonce, plaintext, aad)


def seal_v2(key: bytes, key_id: str, nonce: bytes, context: str, plaintext: bytes) -> bytes:
    # Format v2: 0x02 || key id || 0x00 || nonce || ciphertext || tag; AAD = that header || UTF-8(context).
    header = b"\x02" + key_id.encode("ascii") + b"\x00"
    return header + nonce + AESGCM(key).encrypt(nonce, plaintext, header + context.encode("utf-8"))


def secretbox_v2_vectors():
    key = bytes(range(32))
    other_key = hashlib.sha256(b"siwa-upgrade secretbox fixture key").digest()
    cases = [
        ("empty plaintext, key 0", "0", key, bytes(12), "totp-secret:1", b""),
        ("TOTP secret, key k2", "k2", other_key, bytes(range(100, 112)), "totp-secret:account-42",
         b"12345678901234567890"),
        ("refresh token, longest id", "A" * 16 + "z_-9" * 4, key, bytes.fromhex("cafebabefacedbaddecaf888"),
         "apple-refresh-token:acct-7", b"r.1234567890abcdef.refresh-token-value"),
        ("hash parameters", "2026-11_rotation", other_key, bytes.fromhex("000102030405060708090a0b"),
         "hash-parameters:3", bytes(range(64))),
    ]
    return [
        {
            "name": name,
            "keyID": i,
            "key": k.hex(),
            "nonce": n.hex(),
            "context": c,
            "plaintext": p.hex(),
            "sealed": seal_v2(k, i, n, c, p).hex(),
        }
        for name, i, k, n, c, p in cases
    ]


def secretbox_vectors():
    key = bytes(range(32))
    other_key = hashlib.sha256(b"siwa-upgrade secretbox fixture key").digest()
    dev_key = hashlib.sha256(DEV_DERIVATION.encode()).digest()
    cases = [
        ("empty plaintext", key, bytes(12), "totp-secret:1", b""),
        ("TOTP secret", key, bytes(range(100, 112)), "totp-secret:account-42", b"12345678901234567890"),
        ("refresh token", other_key, bytes.fromhex("cafebabefacedbaddecaf888"), "refresh-token:acct-7",
         b"r.1234567890abcdef.refresh-token-value" * 3),
        ("non-ASCII context", other_key, bytes.fromhex("000102030405060708090a0b"), "totp-secret:j\u00f6rg",
         bytes(range(256))),
        ("empty context", key, bytes.fromhex("ffffffffffffffffffffffff"), "", b"x"),
        ("development key", dev_key, bytes(range(12)), "totp-secret:demo", b"development plaintext"),
    ]
    return [
        {
            "name": name,
            "key": k.hex(),
            "nonce": n.hex(),
            "context": c,
            "plaintext": p.hex(),
            "sealed": seal(k, n, c, p).hex(),
        }
        for name, k, n, c, p in cases
    ]


def recovery_code_hashes():
    prefix = b"siwa-upgrade recovery-code v1\n"
    typed = [
        ("7KQM-W3XD-PF9A-HJ2B-ZZ4N-C8RT", "7KQMW3XDPF9AHJ2BZZ4NC8RT"),
        ("7kqm w3xd pf9a hj2b zz4n c8rt", "7KQMW3XDPF9AHJ2BZZ4NC8RT"),
        ("2222-2222-2222-2222-2222-2222", "222222222222222222222222"),
        ("ZYXW-VUTS-RQPN-MLKJ-HGFE-DCBA", "ZYXWVUTSRQPNMLKJHGFEDCBA"),
    ]
    return [
        {"typed": t, "normalized": n, "hash": hashlib.sha256(prefix + n.encode()).hexdigest()}
        for t, n in typed
    ]


def write(name, value):
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(value, f, indent=2, ensure_ascii=True)
        f.write("\n")


write("secretbox_vectors.json", secretbox_vectors())
write("secretbox_v2_vectors.json", secretbox_v2_vectors())
write("recovery_code_hashes.json", recovery_code_hashes())
print("wrote secretbox_vectors.json, secretbox_v2_vectors.json and recovery_code_hashes.json")
