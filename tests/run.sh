#!/usr/bin/env bash
# Run every tests/t*.sh (or those named), one log each, and end with the
# line CI reads: "N passed, N failed, N skipped".  Exit 77 from a test is a skip.
# A test may be named by path, file name or prefix: tests/t20_synth_pages.sh, t20.
# A prefix names the first match in C order: t30 is t30_journald.sh, not its
# variant t30_journald_257.sh (the locale's order may put that first).
set -uo pipefail
cd "$(dirname "$0")"
logdir=${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}
mkdir -p "$logdir"
# The qemu tests' accelerator is probed once a run (scripts/qemu-accel.sh).
if [[ -z ${AMPTRACE_QEMU_ACCEL_CACHE-} ]]; then
    AMPTRACE_QEMU_ACCEL_CACHE=$(mktemp "${TMPDIR:-/tmp}/amptrace-accel.XXXXXX")
    export AMPTRACE_QEMU_ACCEL_CACHE
    trap 'rm -f -- "$AMPTRACE_QEMU_ACCEL_CACHE"' EXIT
fi
pass=0 failed=0 skipped=0
tests=("$@")
((${#tests[@]})) || tests=(t*.sh)
for t in "${tests[@]}"; do
    t=${t##*/}
    if [[ ! -f $t ]] && match=$(compgen -G "${t%.sh}*.sh" | LC_ALL=C sort) && [[ -n $match ]]; then
        t=${match%%$'\n'*}
    fi
    name=$(basename "$t" .sh)
    start=$SECONDS
    bash "$t" >"$logdir/$name.log" 2>&1
    rc=$?
    case $rc in
        0) pass=$((pass + 1)); status=PASS ;;
        77) skipped=$((skipped + 1)); status=SKIP ;;
        *) failed=$((failed + 1)); status=FAIL ;;
    esac
    why=''   # a skip says why on its own line: the test's SKIP: message
    [[ $status != SKIP ]] || why="  ($(sed -n 's/^SKIP: //p' "$logdir/$name.log" | tail -n 1))"
    printf '%-4s %-28s %4ds%s\n' "$status" "$name" $((SECONDS - start)) "$why"
    if [[ $status == FAIL ]]; then
        sed 's/^/    | /' "$logdir/$name.log" | tail -n 40
    fi
done
echo "$pass passed, $failed failed, $skipped skipped"
((failed == 0))
