#!/usr/bin/env bash
# Run the in-process cmocka tests and the slotscope binary on the sample under
# valgrind (memcheck, full leak check). Exits nonzero on any error or leak.
# Tests that mostly spawn the slotscope binary (cli, robust/hostile, threads)
# are covered by the binary runs at the end; ASan+UBSan covers them in CI.
#   scripts/valgrind.sh [BUILD_DIR]   (default build-test, made by scripts/test.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-test}
[ -x "$build/cli/slotscope" ] || { echo "no $build/cli/slotscope: run scripts/test.sh first" >&2; exit 2; }
vg=(valgrind --leak-check=full --error-exitcode=9 -q)
fail=0
run() { # NAME DIR CMD...
  local name=$1 dir=$2; shift 2
  if (cd "$dir" && "${vg[@]}" "$@" >/tmp/valgrind-"$name".log 2>&1); then
    echo "ok    $name"
  else
    echo "FAIL  $name (see /tmp/valgrind-$name.log)"; fail=1
  fi
}
for t in capture/test_capture_reasm capture/test_capture_source capture/test_capture_corpus \
         capture/test_capture_pcapfile resp/test_resp_alloc resp/test_resp_decode resp/test_resp_pair resp/test_resp_misc resp/test_resp_fixtures \
         resp/test_resp_slot analysis/test_an_detect analysis/test_an_evidence \
         analysis/test_an_nodes analysis/test_an_keys store/test_store store/test_queries \
         robust/test_fuzz_regressions; do
  run "$(basename "$t")" "$build/tests/$(dirname "$t")" "./$(basename "$t")"
done
db=$(mktemp -u /tmp/valgrind-XXXXXX.db)
run analyze . "$build/cli/slotscope" analyze samples/reshard.pcap --db "$db" -q
run analyze-threads . "$build/cli/slotscope" analyze samples/reshard.pcap --threads 2 -q
run analyze-sharded . "$build/cli/slotscope" analyze samples/reshard.pcap --threads 3 -q
run report . "$build/cli/slotscope" report "$db"
rm -f "$db" "$db"-wal "$db"-shm
exit $fail
