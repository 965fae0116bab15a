#!/usr/bin/env bash
# Every benchmark once, with tiny counts and short durations, so that none stops running unnoticed:
#   Benchmarks/smoke.sh [BIN_DIR]     (default: the debug build's bin directory)
# Each must exit 0; the figures mean nothing at these sizes. The PostgreSQL benchmarks use the
# database UPGRADE_TEST_POSTGRES names (Scripts/test starts one) and are skipped, saying so, without
# it. soak.py is not run here: Scripts/test runs it for 60 s on its own.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
bin="${1:-$(swift build --show-bin-path)}"
for program in Benchmarks upgrade-cli http-load-server; do
    [ -x "$bin/$program" ] || { echo "smoke: $bin/$program is missing: swift build first" >&2; exit 2; }
done
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
unset UPGRADE_DB UPGRADE_DEV_POSTGRES_DIR
# The Swift benchmarks' quick mode: shorter measurements, fewer warm-ups and rows, two of the
# costliest hash formats instead of all (main.swift).
export BENCH_QUICK=1
postgres="${UPGRADE_TEST_POSTGRES:-}"
passed=0
failed=0
started=$SECONDS

# check NAME COMMAND...: runs COMMAND with its output in a file; on failure prints the output's end.
check() {
    local name="$1"
    shift
    local begin=$SECONDS
    if "$@" >"$log" 2>&1 </dev/null; then
        passed=$((passed + 1))
        echo "smoke: ok    $name ($((SECONDS - begin)) s)"
    else
        local status=$?
        failed=$((failed + 1))
        echo "smoke: FAIL  $name (exit $status)"
        tail -15 "$log" | sed 's/^/    /'
    fi
}

check "Benchmarks (primitives, SQLite)" "$bin/Benchmarks"
check "Benchmarks upgrade-cpu (SQLite)" "$bin/Benchmarks" upgrade-cpu 5 2
check "Benchmarks webhooks" "$bin/Benchmarks" webhooks 20 5
check "Benchmarks transfer" "$bin/Benchmarks" transfer 20 2 1
check "Benchmarks password-costs" "$bin/Benchmarks" password-costs 1
check "Benchmarks failed-checks" "$bin/Benchmarks" failed-checks 1 --floor 0
check "Benchmarks legacy-stall" "$bin/Benchmarks" legacy-stall 1 2 1
check "Benchmarks upgrade-history (SQLite)" "$bin/Benchmarks" upgrade-history 50 20
check "Benchmarks report (SQLite)" "$bin/Benchmarks" report 300
if [ -n "$postgres" ]; then
    check "Benchmarks (primitives, PostgreSQL)" env UPGRADE_DB="$postgres" "$bin/Benchmarks"
    check "Benchmarks upgrade-cpu (PostgreSQL)" env UPGRADE_DB="$postgres" "$bin/Benchmarks" upgrade-cpu 5
    check "Benchmarks upgrade-scale (PostgreSQL)" env UPGRADE_DB="$postgres" "$bin/Benchmarks" upgrade-scale 4 2 1
    check "Benchmarks upgrade-history (PostgreSQL)" "$bin/Benchmarks" upgrade-history 50 20 --db "$postgres"
    check "Benchmarks report (SQLite, PostgreSQL)" "$bin/Benchmarks" report 300 --db "$postgres"
else
    echo "smoke: skipped the PostgreSQL benchmarks: UPGRADE_TEST_POSTGRES is not set"
fi
check "upgrade-cpu-ab.sh" Benchmarks/upgrade-cpu-ab.sh "$bin" "$bin" 1 5
check "import-rows.sh" Benchmarks/import-rows.sh 200 "$bin/upgrade-cli"
check "provision-batch.sh" Benchmarks/provision-batch.sh 1 "$bin/upgrade-cli"
if command -v wrk >/dev/null; then
    check "http-load.sh" env HTTP_LOAD_SERVER="$bin/http-load-server" Benchmarks/http-load.sh 1 1
    check "readyz-ab.sh" Benchmarks/readyz-ab.sh "$bin" "$bin" 1 1
else
    echo "smoke: skipped http-load.sh and readyz-ab.sh: wrk is not installed (Scripts/setup installs it)"
fi
echo "smoke: $passed passed, $failed failed ($((SECONDS - started)) s)"
[ "$failed" -eq 0 ]
