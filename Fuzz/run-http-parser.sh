#!/usr/bin/env bash
# Builds the HTTP request parser fuzzer (libFuzzer + AddressSanitizer) and runs it for a bounded time.
#   Fuzz/run-http-parser.sh [SECONDS]     (default 60)
# Exits non-zero if the fuzzer finds a crash, a sanitizer error or a broken invariant; the input that
# triggered it is written to .build/fuzz/ (replay: .build/fuzz/http-parser-fuzzer FILE).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"

seconds="${1:-60}"
out=.build/fuzz
mkdir -p "$out/corpus-http"

# The parser sources compile on their own (no imports beyond the standard library), which is what
# lets the fuzzer link them without the rest of the server.
echo "== build fuzzer"
swiftc -sanitize=fuzzer,address -parse-as-library -O -g -use-ld=lld \
    Sources/HTTPCore/Parser/*.swift Fuzz/HTTPParserFuzzer/*.swift \
    -o "$out/http-parser-fuzzer"

echo "== fuzz for ${seconds}s"
# The generated corpus goes to .build; the seeds in Fuzz/corpus/http are only read. Swift's own
# backtracer is off so that a failure is reported by libFuzzer and AddressSanitizer alone.
SWIFT_BACKTRACE=enable=no "$out/http-parser-fuzzer" \
    -max_total_time="$seconds" \
    -timeout=10 \
    -rss_limit_mb=2048 \
    -max_len=8192 \
    -print_final_stats=1 \
    -dict=Fuzz/http.dict \
    -artifact_prefix="$out/" \
    "$out/corpus-http" Fuzz/corpus/http
