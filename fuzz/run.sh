#!/usr/bin/env bash
# Build the fuzz targets with clang (libFuzzer + ASan + UBSan) and run each for
# a while, one after the other (one core), from its seed corpus.
#
#   fuzz/run.sh [--smoke] [--seconds N] [--long-inputs] [--max-len N] [--seeds]
#               [--build-only] [TARGET...]
#
#   --smoke       about 20 s per target (what CI runs)
#   --seconds N   N seconds per target (default 60)
#   --long-inputs turn libFuzzer's length control off (-len_control=0): without
#                 it, inputs grow slowly from a few bytes and stay around 1-8 KB
#                 for minutes, so long pipelines, large CLUSTER replies and
#                 multi-packet streams are barely explored
#   --max-len N   largest input in bytes (default 65536; fuzz_report 131072, its
#                 seeds are whole databases)
#   --seeds       first cut seeds from the fixture captures (tests/fixtures,
#                 *.pcap and *.pcapng under 2 MiB) with fuzz_mkseeds, and add to
#                 fuzz/seeds/TARGET those that add coverage (libFuzzer -merge=1)
#   --build-only  build, run nothing
#   TARGET...     some of: fuzz_pcap fuzz_pcapfile fuzz_resp fuzz_resp_decode
#                 fuzz_redirect fuzz_cluster_replies fuzz_bus fuzz_report (default: all)
#
# Each target reads fuzz/seeds/TARGET and fuzz/regressions/TARGET (read only;
# fuzz_resp_decode also those of fuzz_resp, whose input format it shares) and
# grows its working corpus in build-fuzz/corpus/TARGET, which is kept between
# runs so that several runs add up. A crash, leak, timeout or out-of-memory is
# written to build-fuzz/artifacts/TARGET/ and reported; the script then goes on
# with the other targets and exits 1 at the end. Per target it prints the run
# time, executions, executions per second, coverage (libFuzzer's "cov:" edges
# and "ft:" features) and the corpus size, and appends them to
# build-fuzz/summary.log.
#
# Environment: BUILD_DIR (default build-fuzz), FUZZ_CC (default clang),
# FUZZ_ARGS (more libFuzzer flags).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

all_targets=(fuzz_pcap fuzz_pcapfile fuzz_resp fuzz_resp_decode fuzz_redirect fuzz_cluster_replies
             fuzz_bus fuzz_report)
seconds=60
long_inputs=0
max_len=
seeds=0
build_only=0
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) seconds=20 ;;
    --seconds) seconds="$2"; shift ;;
    --long-inputs) long_inputs=1 ;;
    --max-len) max_len="$2"; shift ;;
    --seeds) seeds=1 ;;
    --build-only) build_only=1 ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    fuzz_*) targets+=("$1") ;;
    *) echo "fuzz/run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
  shift
done
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")

build="${BUILD_DIR:-$root/build-fuzz}"
cc="${FUZZ_CC:-clang}"
if ! command -v "$cc" >/dev/null; then
  echo "fuzz/run.sh: '$cc' not found (the fuzzers need clang with libFuzzer)" >&2
  exit 2
fi

echo "== building fuzz targets in $build with $cc =="
mkdir -p "$build"
CC="$cc" cmake -S "$root" -B "$build" -DSLOTSCOPE_FUZZ=ON -DSLOTSCOPE_TESTS=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo >"$build/cmake.log" 2>&1 ||
  { cat "$build/cmake.log"; exit 2; }
cmake --build "$build" -j2 --target "${targets[@]}" fuzz_mkseeds >"$build/build.log" 2>&1 ||
  { tail -50 "$build/build.log"; exit 2; }

if [ "$seeds" = 1 ]; then
  echo "== regenerating seeds from tests/fixtures =="
  fixtures=()
  while IFS= read -r f; do fixtures+=("$f"); done < <(
    find "$root/tests/fixtures" -maxdepth 2 -type f \( -name '*.pcap' -o -name '*.pcapng' \) \
      -size -2048k | sort)
  if [ ${#fixtures[@]} -gt 0 ]; then
    rm -rf "$build/fixture-seeds"
    "$build/fuzz/fuzz_mkseeds" "$build/fixture-seeds" "${fixtures[@]}" || true
    for t in "${targets[@]}"; do
      [ -d "$build/fixture-seeds/$t" ] || continue
      mkdir -p "$root/fuzz/seeds/$t"
      "$build/fuzz/$t" -merge=1 -max_len=65536 "$root/fuzz/seeds/$t" \
        "$build/fixture-seeds/$t" 2>&1 | grep -o 'MERGE-OUTER: [0-9]* new files.*' |
        sed "s/^/    $t: /" || true
    done
  fi
fi
[ "$build_only" = 1 ] && exit 0

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:symbolize=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
crashed=()
printf '\n%-22s %6s %12s %9s %7s %7s %7s  %s\n' target secs execs exec/s cov ft corpus result
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  artifacts="$build/artifacts/$t"
  log="$build/logs/$t.log"
  mkdir -p "$corpus" "$artifacts" "$build/logs"
  dirs=("$corpus")
  sources=("$t")
  [ "$t" = fuzz_resp_decode ] && sources+=(fuzz_resp)
  for s in "${sources[@]}"; do
    for d in "$root/fuzz/seeds/$s" "$root/fuzz/regressions/$s"; do
      [ -d "$d" ] && dirs+=("$d")
    done
  done
  extra=()
  [ "$long_inputs" = 1 ] && extra+=(-len_control=0)
  len=${max_len:-65536}
  [ -z "$max_len" ] && [ "$t" = fuzz_report ] && len=131072
  if [ -f "$root/fuzz/dict/$t.dict" ]; then
    extra+=("-dict=$root/fuzz/dict/$t.dict")
  elif [ -f "$root/fuzz/dict/resp.dict" ]; then
    extra+=("-dict=$root/fuzz/dict/resp.dict")
  fi
  start=$(date +%s)
  set +e
  # shellcheck disable=SC2086
  "$build/fuzz/$t" "${dirs[@]}" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len="$len" -print_final_stats=1 \
    -artifact_prefix="$artifacts/" "${extra[@]}" ${FUZZ_ARGS:-} >"$log" 2>&1
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  last=$(grep -E 'cov: [0-9]+' "$log" | tail -1 || true)
  cov=$(sed -n 's/.*cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.*ft: \([0-9]*\).*/\1/p' <<<"$last")
  corp=$(sed -n 's/.*corp: \([0-9]*\).*/\1/p' <<<"$last")
  result=ok
  if [ $rc -ne 0 ]; then
    result="CRASH (exit $rc)"
    crashed+=("$t")
  fi
  line=$(printf '%-22s %6s %12s %9s %7s %7s %7s  %s' "$t" "$took" "${execs:-?}" "${rate:-?}" \
    "${cov:-?}" "${ft:-?}" "${corp:-?}" "$result")
  echo "$line"
  echo "$(date -u +%FT%TZ) $line" >>"$build/summary.log"
  if [ $rc -ne 0 ]; then
    grep -E '^(==[0-9]+==ERROR|SUMMARY|.*invariant broken|.*runtime error)' "$log" | head -5 | sed 's/^/    /'
    ls -1 "$artifacts" | sed "s|^|    artifact: $artifacts/|" | head -5
    echo "    log: $log"
  fi
done

if [ ${#crashed[@]} -gt 0 ]; then
  echo "fuzz/run.sh: crashes in ${crashed[*]}" >&2
  exit 1
fi
echo "fuzz/run.sh: ${#targets[@]} targets, no crash"
