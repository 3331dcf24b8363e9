#!/usr/bin/env bash
# disk_full.sh SLOTSCOPE FIXTURES - a database on a file system that fills up.
#
# Mounts a 512 KiB tmpfs, runs `slotscope analyze` on the generated captures
# with --store-commands (more than 512 KiB of rows) into it, and checks: exit
# code 1, the "disk full" error printed exactly once, the report still printed,
# and the database left consistent (integrity_check). Exit 77 (skipped) when
# not root or tmpfs cannot be mounted here.
set -u
bin=$1
fixtures=$2

. "$(dirname "$0")/../helpers/skip.sh"
if [ "$(id -u)" != 0 ]; then skip "mounting a small tmpfs needs root"; fi
command -v sqlite3 >/dev/null || skip "no sqlite3"
dir=$(mktemp -d /tmp/ss_full_XXXXXX)
mkdir "$dir/fs"
if ! mount -t tmpfs -o size=512k tmpfs "$dir/fs" 2>/dev/null; then
    rm -rf "$dir"
    skip "cannot mount a tmpfs here"
fi
trap 'umount "$dir/fs"; rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; cat "$dir/err"; exit 1; }

"$bin" analyze "$fixtures"/gen/*.pcap --store-commands --db "$dir/fs/x.db" >"$dir/out" 2>"$dir/err"
rc=$?
[ "$rc" = 1 ] || fail "exit code $rc, expected 1"
[ "$(grep -c 'disk full' "$dir/err")" = 1 ] || fail "'disk full' not printed exactly once"
grep -q "What the capture could not see" "$dir/out" || fail "no report"
[ "$(sqlite3 "$dir/fs/x.db" 'PRAGMA integrity_check')" = ok ] || fail "database not consistent"
echo "ok: disk full reported once, report printed, database consistent"
