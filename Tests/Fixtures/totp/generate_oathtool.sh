#!/usr/bin/env bash
# Regenerates oathtool_codes.json: TOTP codes computed by oath-toolkit's oathtool, an implementation
# independent of ours, for several secrets, algorithms, code lengths and times. The secrets are fixed
# test values, not real ones. Run from anywhere: bash Tests/Fixtures/totp/generate_oathtool.sh
set -euo pipefail
cd "$(dirname "$0")"
command -v oathtool >/dev/null || { echo "oathtool is missing: apt-get install oathtool" >&2; exit 1; }

# Base32 secrets of 80 bits (the import minimum), 160 bits (RFC 6238's SHA1 seed), and 256 and 512 bits
# (SHA-256 and SHA-512 of fixed strings, with the = padding oathtool and our decoder both accept).
secrets=(
    JBSWY3DPEHPK3PXP
    GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ
    YG4P22IF25FHAABQHVYEXZWAOALCUEQ7SSY7LE3VYNOO3ZESQRRQ====
    MBFD5G2UERKISQHCY5P7USAVXYEKNCPKSHJXAHH63KADD45PSWAXHISZNRT5ETABRZ3AY363XYNLBIAZGCEISW57NPGMIOVLHQI73FA=
)
algorithms=(SHA1 SHA256 SHA512)
digits=(6 8)
# Epoch edges, step boundaries, RFC 6238's times, 2038 and 2100 (past 32-bit time), and 20000000000.
times=(0 29 30 59 60 1111111109 1234567890 1700000000 2000000000 2147483647 2147483648 4102444800 20000000000)

{
    echo "["
    first=1
    for secret in "${secrets[@]}"; do
        for algorithm in "${algorithms[@]}"; do
            for d in "${digits[@]}"; do
                for t in "${times[@]}"; do
                    code=$(oathtool --totp="$algorithm" -d "$d" --now="@$t" --base32 "$secret")
                    [ "$first" -eq 1 ] || echo ","
                    first=0
                    printf '  {"secretBase32": "%s", "algorithm": "%s", "digits": %s, "time": %s, "code": "%s"}' \
                        "$secret" "$algorithm" "$d" "$t" "$code"
                done
            done
        done
    done
    echo
    echo "]"
} >oathtool_codes.json
echo "wrote $(grep -c secretBase32 oathtool_codes.json) codes to oathtool_codes.json"
