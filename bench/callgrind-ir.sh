#!/usr/bin/env bash
# callgrind-ir.sh - instruction counts of one `slotscope analyze` run, the
# figure to compare on a shared machine (wall clock is noise there).
#
#   bench/callgrind-ir.sh SLOTSCOPE_BIN CAPTURE [OUT_PREFIX]
#
# One thread, snapshots every 60 s (so the periodic SQLite work does not
# depend on how slow valgrind makes the run). Prints the total Ir, the Ir
# outside libsqlite3 and libc ("rest": slotscope's own code and libpcap,
# the column that compares) and the top functions by self Ir. The callgrind
# output is kept as OUT_PREFIX.out (default /tmp/callgrind-ir.<pid>).
set -euo pipefail
bin=${1:?usage: callgrind-ir.sh SLOTSCOPE_BIN CAPTURE [OUT_PREFIX]}
cap=${2:?usage: callgrind-ir.sh SLOTSCOPE_BIN CAPTURE [OUT_PREFIX]}
out=${3:-/tmp/callgrind-ir.$$}
db=$out.db
SLOTSCOPE_SNAPSHOT_MS=60000 valgrind --tool=callgrind --callgrind-out-file="$out.out" \
    "$bin" analyze "$cap" --db "$db" --force -q --threads 1 >/dev/null 2>"$out.log"
rm -f "$db" "$db-wal" "$db-shm"
callgrind_annotate --threshold=100 "$out.out" >"$out.txt"
awk '
    /^-+$/ { next }
    /PROGRAM TOTALS/ { gsub(",", "", $1); total = $1; next }
    /^ *[0-9,]+ .*:/ {
        n = $1; gsub(",", "", n)
        if ($0 ~ /libsqlite3|libc[.-]|libc\.so/) lib += n
    }
    END {
        printf "total %.0f Ir, sqlite+libc %.0f, rest %.0f\n", total, lib, total - lib
    }' "$out.txt"
grep -E '^ *[0-9,]+ ' "$out.txt" | sed -n 2,16p
