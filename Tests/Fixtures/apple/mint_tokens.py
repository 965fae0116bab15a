#!/usr/bin/env python3
"""Mints the identity-token fixtures independently of the Swift code under test.

Writes, next to this script:
  jwks.json    two RSA-2048 signature keys with Apple-like short kids (public parts only)
  tokens.json  a fixed `now`, the verifier policy, valid tokens with their expected claims, and one
               rejected token per failure case with the expected IdentityTokenError code

RS256 tokens are signed with joserfc; the deliberately broken ones (alg none, HS256 keyed with the
public key's PEM, tampered payloads) are assembled by hand with `cryptography` and `hmac`.
Output is not deterministic (fresh keys every run); the committed files are one run's output.

    python3 Tests/Fixtures/apple/mint_tokens.py
"""

import base64
import hashlib
import hmac
import json
import pathlib

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from joserfc import jws
from joserfc.jwk import RSAKey

HERE = pathlib.Path(__file__).resolve().parent
NOW = 1_760_000_000
LEEWAY = 60
ISSUER = "https://appleid.apple.com"
BUNDLE_ID = "com.example.siwa-upgrade"
SERVICES_ID = "com.example.siwa-upgrade.web"
NONCE = "q8Z3d1Yh0mJr6b2FvK9sWcXe4TnPaLgU"
KID_1 = "Wq7kT2r"
KID_2 = "pX9mBcQ4Ld"


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def compact_json(value) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode("utf-8")


def generate(kid: str):
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return private, RSAKey.import_key(pem, parameters={"kid": kid})


def sign_rs256(key: RSAKey, header: dict, claims: dict) -> str:
    """joserfc compact JWS with exactly the given protected header (no `typ` added)."""
    return jws.serialize_compact(header, compact_json(claims), key, algorithms=["RS256"])


def sign_by_hand(private, header: dict, claims: dict) -> str:
    signing_input = f"{b64url(compact_json(header))}.{b64url(compact_json(claims))}"
    signature = private.sign(signing_input.encode("ascii"), padding.PKCS1v15(), hashes.SHA256())
    return f"{signing_input}.{b64url(signature)}"


def main() -> None:
    private_1, key_1 = generate(KID_1)
    private_2, key_2 = generate(KID_2)

    jwks = {"keys": []}
    for key in (key_1, key_2):
        public = key.as_dict(private=False)
        jwks["keys"].append(
            {"kty": "RSA", "kid": public["kid"], "use": "sig", "alg": "RS256", "n": public["n"], "e": public["e"]}
        )

    header_1 = {"kid": KID_1, "alg": "RS256"}
    sub = "001234.0123456789abcdef0123456789abcdef.1234"
    transfer_sub = "001234.fedcba9876543210fedcba9876543210.5678"
    base_claims = {
        "iss": ISSUER,
        "aud": BUNDLE_ID,
        "exp": NOW + 600,
        "iat": NOW - 30,
        "sub": sub,
        "nonce": NONCE,
        "c_hash": "9x8RgkcwXTThkHwbCnKW1A",
        "email": "k2x9q7m4pd@privaterelay.appleid.com",
        "email_verified": "true",
        "is_private_email": "true",
        "auth_time": NOW - 31,
        "nonce_supported": True,
        "real_user_status": 2,
        "transfer_sub": transfer_sub,
    }

    def claims(**changes):
        result = dict(base_claims)
        for name, value in changes.items():
            if value is None:
                result.pop(name, None)
            else:
                result[name] = value
        return result

    valid = sign_rs256(key_1, header_1, base_claims)
    second_key_claims = claims(
        aud=SERVICES_ID, email="jane@example.com", email_verified=True, is_private_email=None,
        transfer_sub=None, real_user_status=None, c_hash=None,
    )
    valid_second_key = sign_rs256(key_2, {"kid": KID_2, "alg": "RS256"}, second_key_claims)

    head, payload, signature = valid.split(".")
    tampered_claims = dict(base_claims, sub="009999.ffffffffffffffffffffffffffffffff.9999")
    tampered = f"{head}.{b64url(compact_json(tampered_claims))}.{signature}"

    public_pem = private_1.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    hs_header = b64url(compact_json({"kid": KID_1, "alg": "HS256"}))
    hs_input = f"{hs_header}.{payload}"
    hs256 = f"{hs_input}.{b64url(hmac.new(public_pem, hs_input.encode('ascii'), hashlib.sha256).digest())}"

    none_header = b64url(compact_json({"kid": KID_1, "alg": "none"}))

    negatives = [
        ("alg none, empty signature", f"{none_header}.{payload}.", "malformed"),
        ("alg none with a signature part", f"{none_header}.{payload}.{signature}", "unsupportedAlgorithm"),
        ("HS256 keyed with the RSA public key PEM", hs256, "unsupportedAlgorithm"),
        ("RS512 header", sign_by_hand(private_1, {"kid": KID_1, "alg": "RS512"}, base_claims), "unsupportedAlgorithm"),
        ("unknown kid", sign_rs256(key_1, {"kid": "zzUnknown", "alg": "RS256"}, base_claims), "unknownKeyID"),
        ("no kid", sign_by_hand(private_1, {"alg": "RS256"}, base_claims), "unknownKeyID"),
        ("kid of one key, signed by the other", sign_rs256(key_2, header_1, base_claims), "badSignature"),
        ("expired beyond leeway", sign_rs256(key_1, header_1, claims(exp=NOW - LEEWAY - 1, iat=NOW - 700)), "expired"),
        ("issued in the future beyond leeway", sign_rs256(key_1, header_1, claims(iat=NOW + LEEWAY + 1)), "issuedInFuture"),
        ("wrong iss", sign_rs256(key_1, header_1, claims(iss="https://appleid.apple.com.evil.example")), "wrongIssuer"),
        ("aud not allowed", sign_rs256(key_1, header_1, claims(aud="com.attacker.app")), "audienceNotAllowed"),
        ("missing nonce", sign_rs256(key_1, header_1, claims(nonce=None)), "nonceMissing"),
        ("wrong nonce", sign_rs256(key_1, header_1, claims(nonce="q8Z3d1Yh0mJr6b2FvK9sWcXe4TnPaLgV")), "nonceMismatch"),
        ("missing sub", sign_rs256(key_1, header_1, claims(sub=None)), "missingSubject"),
        ("exp as a string", sign_rs256(key_1, header_1, claims(exp=str(NOW + 600))), "invalidClaim"),
        ("tampered payload, original signature", tampered, "badSignature"),
        ("truncated signature (still canonical base64url)", valid[:-6], "badSignature"),
        ("four parts", valid + ".e30", "malformed"),
        ("padded base64", f"{head}=.{payload}.{signature}", "malformed"),
    ]

    document = {
        "comment": "Generated by mint_tokens.py; see that script. Keys in jwks.json; private keys are not kept.",
        "now": NOW,
        "leeway": LEEWAY,
        "issuer": ISSUER,
        "audiences": [BUNDLE_ID, SERVICES_ID],
        "nonce": NONCE,
        "valid": [
            {
                "name": "first key, string booleans, transfer_sub",
                "token": valid,
                "expected": {
                    "iss": ISSUER, "aud": BUNDLE_ID, "sub": sub, "iat": NOW - 30, "exp": NOW + 600,
                    "auth_time": NOW - 31, "email": base_claims["email"], "email_verified": True,
                    "is_private_email": True, "nonce_supported": True, "real_user_status": 2,
                    "transfer_sub": transfer_sub, "c_hash": base_claims["c_hash"],
                },
            },
            {
                "name": "second key, Services ID audience, JSON booleans",
                "token": valid_second_key,
                "expected": {
                    "iss": ISSUER, "aud": SERVICES_ID, "sub": sub, "iat": NOW - 30, "exp": NOW + 600,
                    "auth_time": NOW - 31, "email": "jane@example.com", "email_verified": True,
                    "nonce_supported": True,
                },
            },
        ],
        "invalid": [{"name": name, "token": token, "code": code} for name, token, code in negatives],
    }

    (HERE / "jwks.json").write_text(json.dumps(jwks, indent=2) + "\n")
    (HERE / "tokens.json").write_text(json.dumps(document, indent=2) + "\n")


if __name__ == "__main__":
    main()
