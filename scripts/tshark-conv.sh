#!/usr/bin/env bash
# Expected per-connection stream bytes of a capture, according to tshark, for
# tests/capture/test_capture_corpus.c.
#
#   scripts/tshark-conv.sh FILE > FILE.conv
#
# One line per TCP stream tshark finds (tcp.stream), in stream order:
#   ENDPOINT_A ENDPOINT_B BYTES_A_TO_B BYTES_B_TO_A
# A is tshark's "Node 0" (the side that sent the stream's first packet). The
# byte counts are payload bytes after tshark's own TCP reassembly (-z
# follow,tcp,raw: retransmitted bytes once), not frame bytes as in
# `tshark -z conv,tcp`, and not the bytes the capture lost. Endpoints are
# written "1.2.3.4:80" or "[::1]:80".
set -euo pipefail
file=${1:?usage: $0 FILE}
streams=$(tshark -r "$file" -T fields -e tcp.stream 2>/dev/null | grep -E '^[0-9]+$' | sort -n -u)
[ -n "$streams" ] || exit 0
args=()
for s in $streams; do args+=(-z "follow,tcp,raw,$s"); done
# Each follow block: "Node 0: A", "Node 1: B", then hex lines (indented = from B).
# Where the capture lost bytes, tshark writes the text "[N bytes missing in
# capture file]" as a hex line of its own: those are not stream bytes.
missing='^5b(3[0-9])+206279746573206d697373696e6720696e20636170747572652066696c655d(00|2e)?$'
tshark -q -r "$file" "${args[@]}" 2>/dev/null | awk -v missing="$missing" '
  /^Filter: tcp.stream eq / { stream = $4 }
  /^Node 0: / { a[stream] = $3 }
  /^Node 1: / { b[stream] = $3 }
  /^\t?[0-9a-f]+$/ && $1 ~ missing { next }
  /^\t[0-9a-f]+$/ { ba[stream] += length($1) / 2; next }
  /^[0-9a-f]+$/ { ab[stream] += length($1) / 2; next }
  END { for (s in a) printf "%d %s %s %d %d\n", s, a[s], b[s], ab[s] + 0, ba[s] + 0 }
' | sort -n | cut -d" " -f2-
