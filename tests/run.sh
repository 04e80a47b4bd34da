#!/usr/bin/env bash
# Run every tests/t*.sh (or those named), one log each, and end with the
# line CI reads: "N passed, N failed, N skipped".  Exit 77 from a test is a skip.
# A test may be named by path, file name or prefix: tests/t20_synth_pages.sh, t20.
# A prefix names the first match in C order: t30 is t30_journald.sh, not its
# variant t30_journald_257.sh (the locale's order may put that first).
#
# AMP_TEST_TOGETHER (default "t95,t96"): tests run at the same time, when
# the first of them comes, their results printed in order after the last
# ends; "" runs everything one after the other.  Emulated guests mostly
# wait on their disks and timers: on this 2-vCPU host t95 and t96 took
# 1,443 s together, 1,800 + 1,128 one after the other.
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

# resolve NAME: the test file a name, path or prefix names.
resolve() {
    local t=${1##*/} match
    if [[ ! -f $t ]] && match=$(compgen -G "${t%.sh}*.sh" | LC_ALL=C sort) && [[ -n $match ]]; then
        t=${match%%$'\n'*}
    fi
    echo "$t"
}

# run_one FILE: runs it into its log; its status and time in $logdir/NAME.rc.
run_one() {
    local t=$1 name start rc
    name=$(basename "$t" .sh)
    start=$SECONDS
    bash "$t" >"$logdir/$name.log" 2>&1
    rc=$?
    echo "$rc $((SECONDS - start))" >"$logdir/$name.rc"
}

pass=0 failed=0 skipped=0
# report FILE: its line (and a failure's log tail) from its .rc.
report() {
    local name rc secs status why=''
    name=$(basename "$1" .sh)
    read -r rc secs <"$logdir/$name.rc"
    rm -f -- "$logdir/$name.rc"
    case $rc in
        0) pass=$((pass + 1)); status=PASS ;;
        77) skipped=$((skipped + 1)); status=SKIP ;;
        *) failed=$((failed + 1)); status=FAIL ;;
    esac
    # a skip says why on its own line: the test's SKIP: message
    [[ $status != SKIP ]] || why="  ($(sed -n 's/^SKIP: //p' "$logdir/$name.log" | tail -n 1))"
    printf '%-4s %-28s %4ds%s\n' "$status" "$name" "$secs" "$why"
    if [[ $status == FAIL ]]; then
        sed 's/^/    | /' "$logdir/$name.log" | tail -n 40
    fi
}

tests=()
for t in "${@:-t*.sh}"; do
    [[ $t == 't*.sh' ]] && { tests+=(t*.sh); continue; }
    tests+=("$(resolve "$t")")
done
together=()
IFS=, read -r -a names <<<"${AMP_TEST_TOGETHER-t95,t96}"
for n in "${names[@]}"; do
    f=$(resolve "$n")
    for t in "${tests[@]}"; do [[ $t == "$f" ]] && { together+=("$f"); break; }; done
done
((${#together[@]} > 1)) || together=()

done_already=" "
for t in "${tests[@]}"; do
    [[ $done_already == *" $t "* ]] && continue
    if [[ " ${together[*]} " == *" $t "* ]]; then
        pids=()
        for g in "${together[@]}"; do
            run_one "$g" &
            pids+=($!)
        done
        wait "${pids[@]}"
        for g in "${together[@]}"; do
            report "$g"
            done_already+="$g "
        done
        continue
    fi
    run_one "$t"
    report "$t"
done
echo "$pass passed, $failed failed, $skipped skipped"
((failed == 0))
