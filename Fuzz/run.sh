#!/usr/bin/env bash
# Builds a libFuzzer harness (with AddressSanitizer) and runs it for a bounded time.
#   Fuzz/run.sh TARGET [SECONDS]     (default 60)
#     http-parser   HTTPRequestParser (Fuzz/HTTPParserFuzzer): split-invariance, limits, round trip
#     json          JSONValue.parse (Fuzz/JSONFuzzer): round trip, and agreement with Foundation's
#                   JSONSerialization except for the reader's documented strict rules
#     jws           JWSCompact, JWSHeader and Base64URL (Fuzz/JWSFuzzer): what reads an identity
#                   token before its signature is checked, against Foundation's base64 decoder
#     password-hash PasswordHash(parsing:limits:) (Fuzz/PasswordHashFuzzer): what reads a stored hash
#                   and bounds what checking it may cost, under the default limits and tight ones
#     username      Username(_:) and its skeleton (Fuzz/UsernameFuzzer): the rule every username
#                   passes before it keys an account: stable, visible, NFC, white space around ignored
#     import-reader ImportReader (Fuzz/ImportReaderFuzzer): the CSV and JSON Lines reader of
#                   accounts import: the same rows in memory and read in pieces, CSV written back reads the same
#     otpauth       OTPAuthURI.parse (Fuzz/OTPAuthURIFuzzer): imported TOTP enrolments: bounds, and
#                   the enrolment written out again reads the same
#     postgres-url  PostgresConfiguration(url:) (Fuzz/PostgresURLFuzzer): the database URL: bounds,
#                   nothing libpq cannot take, the description reads back, no message quotes the password
# Exits non-zero if the fuzzer finds a crash, a sanitizer error or a broken invariant; the input that
# triggered it is written to .build/fuzz/ (replay: .build/fuzz/TARGET-fuzzer FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

target="${1:?usage: Fuzz/run.sh http-parser|json|jws|password-hash|username|import-reader|otpauth|postgres-url [SECONDS]}"
seconds="${2:-60}"
out=.build/fuzz
mkdir -p "$out"
extra=()
# Each harness compiles with its sources only (they import nothing of the rest of the server), which
# is what lets the fuzzer link them without the rest of the server.
case "$target" in
    http-parser) sources=(Sources/HTTPCore/Parser/*.swift Fuzz/HTTPParserFuzzer/*.swift); corpus=http; dict=(-dict=Fuzz/http.dict) ;;
    json) sources=(Sources/UpgradeEngine/JSON/*.swift Fuzz/JSONFuzzer/*.swift); corpus=json; dict=(-dict=Fuzz/json.dict) ;;
    jws) sources=(Sources/UpgradeEngine/JSON/*.swift Sources/UpgradeEngine/Crypto/{JWSCompact,JWSError,JWSHeader,Base64URL}.swift Fuzz/JWSFuzzer/*.swift); corpus=jws; dict=() ;;
    password-hash)
        # The parser's files reach the key derivations (never run here), so they link with the C
        # libraries the engine uses; CSystem (getrandom) is compiled beside them with a module map
        # of its own, as SwiftPM would.
        sources=(Sources/UpgradeEngine/Credentials/{PasswordHash*,PasswordKDF,HashParameterSet}.swift
            Sources/UpgradeEngine/Crypto/{Digest,ConstantTime,EVPKeySupport,OpenSSLError,SecureRandom,Base64URL}.swift
            Fuzz/PasswordHashFuzzer/*.swift)
        corpus=password-hash; dict=(-dict=Fuzz/password-hash.dict)
        mkdir -p "$out/csystem"
        printf 'module CSystem {\n    header "%s"\n    export *\n}\n' "$PWD/Sources/CSystem/include/CSystem.h" >"$out/csystem/module.modulemap"
        clang -c -O1 -fPIC -I Sources/CSystem/include Sources/CSystem/CSystem.c -o "$out/csystem/CSystem.o"
        extra=(-I Sources/CArgon2 -I Sources/CCrypt -I Sources/COpenSSL -I "$out/csystem" "$out/csystem/CSystem.o")
        ;;
    username)
        # ICU (libicu-dev) through the engine's C shim, compiled beside the sources as for CSystem.
        sources=(Sources/UpgradeEngine/Credentials/{Username,UsernameError,PRECISIdentifierClass,BidiRule,SpoofChecker}.swift
            Fuzz/UsernameFuzzer/*.swift)
        corpus=username; dict=(-dict=Fuzz/username.dict)
        mkdir -p "$out/cicushims"
        printf 'module CICUShims {\n    header "%s"\n    export *\n}\n' "$PWD/Sources/CICUShims/include/CICUShims.h" >"$out/cicushims/module.modulemap"
        clang -c -O1 -fPIC -I Sources/CICUShims/include Sources/CICUShims/CICUShims.c -o "$out/cicushims/CICUShims.o"
        extra=(-I "$out/cicushims" "$out/cicushims/CICUShims.o" -licui18n -licuuc)
        ;;
    import-reader) sources=(Sources/UpgradeEngine/JSON/*.swift Sources/UpgradeEngine/Import/ImportReader.swift Fuzz/ImportReaderFuzzer/*.swift); corpus=import-reader; dict=(-dict=Fuzz/import-reader.dict) ;;
    otpauth)
        sources=(Sources/UpgradeEngine/Credentials/{OTPAuthURI,OTPAuthURIError,TOTPParameters,TOTPParametersError,TOTP,TOTPVerification,Base32}.swift
            Sources/UpgradeEngine/Crypto/{Digest,ConstantTime,EVPKeySupport,OpenSSLError}.swift Fuzz/OTPAuthURIFuzzer/*.swift)
        corpus=otpauth; dict=(-dict=Fuzz/otpauth.dict); extra=(-I Sources/COpenSSL)
        ;;
    postgres-url)
        sources=(Sources/UpgradeEngine/Storage/Postgres/PostgresConfiguration.swift Sources/UpgradeEngine/Storage/StorageError.swift
            Fuzz/PostgresURLFuzzer/*.swift)
        corpus=postgres-url; dict=(-dict=Fuzz/postgres-url.dict)
        ;;
    *) echo "Fuzz/run.sh: unknown target '$target' (http-parser, json, jws, password-hash, username, import-reader, otpauth or postgres-url)" >&2; exit 2 ;;
esac
mkdir -p "$out/corpus-$corpus"

echo "== build $target fuzzer"
swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld "${sources[@]}" "${extra[@]}" -o "$out/$target-fuzzer"

echo "== fuzz $target for ${seconds}s"
# The generated corpus goes to .build; the seeds in Fuzz/corpus/$corpus are only read. Swift's own
# backtracer is off so that a failure is reported by libFuzzer and AddressSanitizer alone.
SWIFT_BACKTRACE=enable=no "$out/$target-fuzzer" \
    -max_total_time="$seconds" \
    -timeout=10 \
    -rss_limit_mb=2048 \
    -max_len=8192 \
    -print_final_stats=1 \
    "${dict[@]}" \
    -artifact_prefix="$out/" \
    "$out/corpus-$corpus" "Fuzz/corpus/$corpus"
