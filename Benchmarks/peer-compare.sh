#!/usr/bin/env bash
# The server's GET /healthz and GET /readyz against a Hummingbird server's GET /ping, measured in
# one run, alternating so that each sees the same machine:
#   Benchmarks/peer-compare.sh [ROUNDS] [SECONDS] [CONNECTIONS]   (defaults: 3 rounds of 10 s, 64; needs wrk)
# Ours is a release `upgrade-cli serve --dev` (SQLite, request log to a file, as a deployment's log
# collector would take it). The peer is Benchmarks/peers/hummingbird-peer, a separate package built
# here in release mode (Hummingbird from the machine's package mirrors): it is never a dependency of
# the product and CI does not build it. Per target and round: requests/s and p50, p99 and p99.9 in
# milliseconds (wrk's own histogram, read by Benchmarks/latency.lua); then the median of the rounds.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
rounds="${1:-3}"
seconds="${2:-10}"
connections="${3:-64}"
command -v wrk >/dev/null || { echo "peer-compare: wrk is not installed" >&2; exit 2; }

swift build -c release --product upgrade-cli >/dev/null
ours="$(swift build -c release --show-bin-path)/upgrade-cli"
swift build -c release --package-path Benchmarks/peers/hummingbird-peer >/dev/null
peer="$(swift build -c release --package-path Benchmarks/peers/hummingbird-peer --show-bin-path)/HummingbirdPeer"

workdir="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill -TERM "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
    rm -rf "$workdir"
}
trap cleanup EXIT

# start NAME: starts the server NAME (ours or peer) and sets `port`.
start() {
    port=""
    if [ "$1" = ours ]; then
        # The per-client cap a little above the connection count: wrk may open a connection again
        # before the server has seen the old one close.
        # The log exists before the server starts: the shell opens it in the child, which may run late.
        : >"$workdir/log"
        "$ours" serve --dev --listen 127.0.0.1:0 --emulator-port 0 --max-connections-per-client $((connections + 16)) \
            >>"$workdir/log" 2>&1 &
        server_pid=$!
        for _ in $(seq 100); do
            port="$(sed -n 's/^listening on http:\/\/127\.0\.0\.1:\([0-9]*\).*/\1/p' "$workdir/log")"
            [ -n "$port" ] && break
            sleep 0.1
        done
    else
        port=$((20000 + RANDOM % 20000))
        "$peer" "$port" >"$workdir/log" 2>&1 &
        server_pid=$!
        for _ in $(seq 100); do
            curl -fs "http://127.0.0.1:$port/ping" >/dev/null 2>&1 && break
            sleep 0.1
        done
    fi
    [ -n "$port" ] || { echo "peer-compare: $1 did not start: $(cat "$workdir/log")" >&2; exit 1; }
}

stop() {
    kill -TERM "$server_pid"
    wait "$server_pid" || true
    server_pid=""
}

# measure LABEL PATH: one wrk run; appends "LABEL rate p50 p99 p999" to the results.
measure() {
    wrk -t2 -c"$connections" -d"${seconds}s" -s Benchmarks/latency.lua "http://127.0.0.1:$port$2" >"$workdir/wrk"
    local rate percentiles errors
    rate="$(awk '/Requests\/sec/ {print $2}' "$workdir/wrk")"
    percentiles="$(awk '$1 == "percentiles" {print $2, $3, $4}' "$workdir/wrk")"
    errors="$(awk '/Non-2xx|Socket errors/' "$workdir/wrk" | tr -s ' ' | tr '\n' ' ')"
    printf 'round %s  %-22s %10s req/s   p50/p99/p99.9 %s ms   %s\n' "$round" "$1" "$rate" \
        "$(tr ' ' '/' <<<"$percentiles")" "${errors:-no errors}"
    echo "$1 $rate $percentiles" >>"$workdir/results"
}

echo "wrk -t2 -c$connections -d${seconds}s ($(nproc) cores, $rounds rounds, alternating)"
for round in $(seq "$rounds"); do
    start ours
    measure "ours /healthz" /healthz
    measure "ours /readyz" /readyz
    stop
    start peer
    measure "hummingbird /ping" /ping
    stop
done
echo "median of $rounds rounds:"
for label in "ours /healthz" "ours /readyz" "hummingbird /ping"; do
    for column in 2 3 4 5; do
        awk -v label="$label" -v column="$column" '
            { name = $1 " " $2 } name == label { print $(column + 1) }' "$workdir/results" |
            sort -g | awk '{ v[NR] = $1 } END { printf "%s ", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
    done | awk -v label="$label" '{ printf "  %-22s %10.0f req/s   p50 %.3f  p99 %.3f  p99.9 %.3f ms\n", label, $1, $2, $3, $4 }'
done
