#!/usr/bin/env bash
# html-screenshot.sh - the HTML report of a database as a PNG, through
# headless Chromium (as tests/cli/test_html.c opens it):
#
#   scripts/html-screenshot.sh SLOTSCOPE_BIN DB OUT.png [WIDTHxHEIGHT] [SCALE]
#
# docs/report-html.png (the README's screenshot) is made from the database of
# samples/reshard.pcap with: ... OUT.png 1100x1500 0.8
set -euo pipefail
bin=${1:?usage: html-screenshot.sh SLOTSCOPE_BIN DB OUT.png [WxH] [SCALE]}
db=${2:?}
out=${3:?}
size=${4:-1200x2400}
scale=${5:-1}
work=$(mktemp -d /tmp/ss-shot.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$bin" report "$db" --html "$work/report.html"
chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-extensions \
    --hide-scrollbars --user-data-dir="$work/profile" --window-size="${size/x/,}" \
    --force-device-scale-factor="$scale" --screenshot="$out" "file://$work/report.html" \
    2>/dev/null
ls -l "$out"
