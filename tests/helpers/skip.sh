# skip.sh - sourced by the shell tests: skip WHY says why the test cannot run
# and exits 77 (ctest: skipped); in CI (CI=true, every prerequisite installed)
# it fails instead, so a test that did not run never counts as passed there.
skip() {
    if [ "${CI:-}" = true ]; then echo "FAIL: cannot run in CI: $*"; exit 1; fi
    echo "SKIP: $*"
    exit 77
}
