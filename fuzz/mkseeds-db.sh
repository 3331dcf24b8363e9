#!/usr/bin/env bash
# Seeds of fuzz_report: small real databases. Each fixture capture below is
# analysed (the small ones with --store-commands, so that every table has
# rows; findings.pcap, with every finding kind, without), then rewritten
# with 512-byte pages (VACUUM) so that the file fits libFuzzer's lengths.
#
#   fuzz/mkseeds-db.sh SLOTSCOPE_BINARY
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$1"
out=fuzz/seeds/fuzz_report
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
for cap in tests/fixtures/cli/set.pcap tests/fixtures/gen/findings.pcap \
           tests/fixtures/cli/pipelining-example.pcap; do
  name=$(basename "$cap" .pcap)
  more=(--store-commands)
  [ "$name" = findings ] && more=()
  "$bin" analyze "$cap" --db "$tmp/$name.db" "${more[@]}" -q >/dev/null || true
  sqlite3 "$tmp/$name.db" "PRAGMA page_size=512; VACUUM;"
  cp "$tmp/$name.db" "$out/$name.db"
done
ls -l "$out"
