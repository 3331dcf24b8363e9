#!/usr/bin/env bash
# samedb.sh - prove that a change did not change behaviour: run two slotscope
# binaries on the same captures and compare their databases (sqlite3 .dump,
# minus the run's own meta rows: start_us, end_us, command_line) and their
# text reports (minus the lines naming the database path or the run time).
#
#   scripts/samedb.sh OLD_BIN NEW_BIN [--args "EXTRA ANALYZE ARGS"]
#                     [--strip-new SQL_FILE] CAPTURE...
#
# --strip-new runs SQL_FILE on each database of NEW_BIN before its dump (to
# take away what a change meant to add, e.g. scripts/samedb-strip-frames.sql)
# and then compares the rows only (INSERT lines), not the schema text.
#
# With no CAPTURE, every sample and fixture capture of the repository is used.
# Prints one line per capture (same / DIFFERENT) and exits 1 when any differs;
# the diffs stay in the work directory it names.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
old=${1:?usage: samedb.sh OLD_BIN NEW_BIN [--args ARGS] CAPTURE...}
new=${2:?usage: samedb.sh OLD_BIN NEW_BIN [--args ARGS] CAPTURE...}
shift 2
extra=""
strip=""
if [ "${1:-}" = "--args" ]; then extra=$2; shift 2; fi
if [ "${1:-}" = "--strip-new" ]; then strip=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2; fi
caps=("$@")
if [ ${#caps[@]} -eq 0 ]; then
    mapfile -t caps < <(find "$root/samples" "$root/tests/fixtures" -type f \
        \( -name '*.pcap' -o -name '*.pcapng' \) | sort)
fi
work=$(mktemp -d /tmp/samedb.XXXXXX)
bad=0

# dump DB: the database as SQL, the run's own meta rows left out.
dump() {
    if [ -n "$strip" ]; then
        sqlite3 "$1" .dump | grep '^INSERT' |
            grep -v -E "INSERT INTO meta VALUES\('(start_us|end_us|command_line)'"
    else
        sqlite3 "$1" .dump | grep -v -E "INSERT INTO meta VALUES\('(start_us|end_us|command_line)'"
    fi
}

# clean: a text report without the lines that name the database or a duration.
clean() { grep -v -E '^(database|wrote|analysed in|elapsed)' "$1" || true; }

i=0
for cap in "${caps[@]}"; do
    i=$((i + 1))
    for side in old new; do
        bin=$old; [ $side = new ] && bin=$new
        # shellcheck disable=SC2086
        "$bin" analyze "$cap" --db "$work/$i.$side.db" --force $extra \
            >"$work/$i.$side.txt" 2>"$work/$i.$side.err" || true
        if [ -n "$strip" ] && [ $side = new ] && [ -f "$work/$i.$side.db" ]; then
            sqlite3 "$work/$i.$side.db" <"$strip"
        fi
        if [ -f "$work/$i.$side.db" ]; then dump "$work/$i.$side.db" >"$work/$i.$side.sql"
        else : >"$work/$i.$side.sql"; fi
        clean "$work/$i.$side.txt" >"$work/$i.$side.rep"
    done
    if cmp -s "$work/$i.old.sql" "$work/$i.new.sql" && cmp -s "$work/$i.old.rep" "$work/$i.new.rep"; then
        echo "same       $cap"
    else
        echo "DIFFERENT  $cap   (diff $work/$i.old.sql $work/$i.new.sql; $work/$i.*.rep)"
        bad=1
    fi
done
echo "work directory: $work"
exit $bad
