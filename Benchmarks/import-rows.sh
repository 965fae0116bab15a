#!/bin/sh
# Rows per second and peak RSS of `upgrade-cli accounts import` for ROWS generated rows (default
# 1,000,000) whose bcrypt hashes need no work at import, into a fresh SQLite database (or
# UPGRADE_DB). Usage: Benchmarks/import-rows.sh [ROWS] [CLI] [IMPORT OPTION...]
set -eu
rows=${1:-1000000}
cli=${2:-.build/release/upgrade-cli}
shift $(( $# < 2 ? $# : 2 ))
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
python3 - "$rows" "$dir/users.jsonl" <<'PY'
import sys
rows, path = int(sys.argv[1]), sys.argv[2]
hash = "$2b$04$GV7oqmKVW/S97lcGqiz7cuIlvV70W5zNF3ryK5m8gokOHiIXED0Wq"
with open(path, "w") as f:
    for i in range(rows):
        f.write('{"username":"user%d","passwordHash":"%s","email":"user%d@example.com"}\n' % (i, hash, i))
PY
db=${UPGRADE_DB:-sqlite:$dir/import.db}
"$cli" db migrate --db "$db" >/dev/null
/usr/bin/time -f "peak RSS %M KiB, %e s elapsed, %U s user, %S s system" \
    "$cli" accounts import "$dir/users.jsonl" --db "$db" "$@" 2>&1 </dev/null | grep -v '^progress:'
