#!/usr/bin/env bash
# Builds a libFuzzer harness (with AddressSanitizer) and runs it for a bounded time.
#   Fuzz/run.sh TARGET [SECONDS]     (default 60)
#     http-parser   HTTPRequestParser (Fuzz/HTTPParserFuzzer): split-invariance, limits, round trip
#     json          JSONValue.parse (Fuzz/JSONFuzzer): round trip, and agreement with Foundation's
#                   JSONSerialization except for the reader's documented strict rules
#     jws           JWSCompact, JWSHeader and Base64URL (Fuzz/JWSFuzzer): what reads an identity
#                   token before its signature is checked, against Foundation's base64 decoder
# Exits non-zero if the fuzzer finds a crash, a sanitizer error or a broken invariant; the input that
# triggered it is written to .build/fuzz/ (replay: .build/fuzz/TARGET-fuzzer FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

target="${1:?usage: Fuzz/run.sh http-parser|json|jws [SECONDS]}"
seconds="${2:-60}"
# Each harness compiles with its sources only (they import nothing of the rest of the server), which
# is what lets the fuzzer link them without the rest of the server.
case "$target" in
    http-parser) sources=(Sources/HTTPCore/Parser/*.swift Fuzz/HTTPParserFuzzer/*.swift); corpus=http; dict=(-dict=Fuzz/http.dict) ;;
    json) sources=(Sources/UpgradeEngine/JSON/*.swift Fuzz/JSONFuzzer/*.swift); corpus=json; dict=(-dict=Fuzz/json.dict) ;;
    jws) sources=(Sources/UpgradeEngine/JSON/*.swift Sources/UpgradeEngine/Crypto/{JWSCompact,JWSError,JWSHeader,Base64URL}.swift Fuzz/JWSFuzzer/*.swift); corpus=jws; dict=() ;;
    *) echo "Fuzz/run.sh: unknown target '$target' (http-parser, json or jws)" >&2; exit 2 ;;
esac
out=.build/fuzz
mkdir -p "$out/corpus-$corpus"

echo "== build $target fuzzer"
swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld "${sources[@]}" -o "$out/$target-fuzzer"

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
