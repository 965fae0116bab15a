#!/bin/sh
# Rows per second through `POST /v1/admin/accounts/batch`: BATCHES batches of 1000 new accounts
# (default 100), each row an argon2id hash (parsed and bounded, nothing computed) and an email,
# sent one batch at a time by curl to `upgrade-cli serve --dev` on a fresh SQLite file (or
# UPGRADE_DB), then the same batches again (every row `skipped`).
# Usage: Benchmarks/provision-batch.sh [BATCHES] [CLI]
set -eu
batches=${1:-100}
cli=${2:-.build/release/upgrade-cli}
dir=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
python3 - "$batches" "$dir" <<'PY'
import json, sys
batches, directory = int(sys.argv[1]), sys.argv[2]
hash = "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$t2X3m0uK8oN9Tj0fOaR3b7y0yF0G9bL6iE8mQ1tC3aU"
for b in range(batches):
    rows = [{"username": "user%d" % (b * 1000 + i), "passwordHash": hash,
             "email": "user%d@example.com" % (b * 1000 + i)} for i in range(1000)]
    with open("%s/batch%d.json" % (directory, b), "w") as f:
        json.dump({"accounts": rows}, f)
PY
token=$("$cli" admin tokens add bench --scopes provisioning --file "$dir/tokens")
db=${UPGRADE_DB:-sqlite:$dir/provision.db}
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$cli" serve --dev --emulator-port 0 --db "$db" --listen "127.0.0.1:$port" --admin-tokens-file "$dir/tokens" >"$dir/serve.log" 2>&1 &
pid=$!
for _ in $(seq 100); do curl -fs "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break; sleep 0.1; done
run() {
    start=$(date +%s.%N)
    b=0
    while [ "$b" -lt "$batches" ]; do
        curl -fsS -o "$dir/answer.json" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
            --data-binary "@$dir/batch$b.json" "http://127.0.0.1:$port/v1/admin/accounts/batch"
        b=$((b + 1))
    done
    end=$(date +%s.%N)
    action=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1]))["results"]; print(",".join(sorted(set(x["action"] for x in r))))' "$dir/answer.json")
    python3 -c 'import sys; n, s, a = int(sys.argv[1]) * 1000, float(sys.argv[3]) - float(sys.argv[2]), sys.argv[4]; print("%s: %d rows in %.2f s, %.0f rows/s (last batch: %s)" % (sys.argv[5], n, s, n / s, a, ))' \
        "$batches" "$start" "$end" "$action" "$1"
}
run "new accounts"
run "the same batches again"
