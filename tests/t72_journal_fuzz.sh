#!/usr/bin/env bash
# Fuzz the journal reader (user/journal/journal_*.c) with libFuzzer under ASan and
# UBSan (tests/fuzz_journal.c), for AMP_FUZZ_SECONDS (20 here; `make fuzz`
# runs 600).  Seeds: small files written by journald 252's own append code
# in all four layouts (compact/regular x keyed/unkeyed), cut to their last
# object.  New inputs accumulate in build/fuzz-corpus; a crash leaves its
# input in the test log directory and fails the test.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
secs=${AMP_FUZZ_SECONDS:-20}
fuzzer=$AMP_ROOT/build/tests/fuzz_journal
logdir=${AMP_TEST_LOGS:-/tmp/amptrace-test-logs}

# No libFuzzer runtime is a skip; a fuzzer that does not build is a failure.
echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' |
    clang -fsanitize=fuzzer -x c - -o "$AMP_TMP/probe" >/dev/null 2>&1 ||
    skip "clang cannot link libFuzzer (apt-get install libclang-rt-14-dev)"
make -C "$AMP_ROOT" --no-print-directory -s build/tests/fuzz_journal ||
    fail "the fuzzer does not build"
ok "built $fuzzer"

mkdir -p "$AMP_TMP/seeds" "$AMP_ROOT/build/fuzz-corpus" "$logdir"
for layout in compact regular; do
    for hash in keyed unkeyed; do
        "$AMP_ROOT/scripts/bench_journal.sh" gen "$AMP_TMP/g.journal" --entries 40 \
            --layout "$layout" --hash "$hash" --max-size $((1 << 20)) --seed 72 2>/dev/null ||
            skip "cannot write seed journals (needs systemd 252's libsystemd-shared)"
        python3 - "$AMP_TMP/g.journal" "$AMP_TMP/seeds/$layout-$hash.journal" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
tail = struct.unpack_from("<Q", b, 136)[0]
size = struct.unpack_from("<Q", b, tail + 8)[0]
open(sys.argv[2], "wb").write(b[:(tail + size + 7) & ~7])
EOF
        "$AMPTRACE" explain --check "$AMP_TMP/seeds/$layout-$hash.journal" >/dev/null ||
            fail "seed $layout-$hash does not pass --check"
    done
done
ok "4 seeds: $(cd "$AMP_TMP/seeds" && stat -c '%n %s B' * | tr '\n' ' ')"

# -max_len: the largest seed, so mutations can keep whole files.
maxlen=$(stat -c %s "$AMP_TMP"/seeds/* | sort -n | tail -n 1)
rc=0
"$fuzzer" -max_total_time="$secs" -max_len="$maxlen" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$logdir/fuzz-journal-" \
    "$AMP_ROOT/build/fuzz-corpus" "$AMP_TMP/seeds" >"$AMP_TMP/fuzz.log" 2>&1 || rc=$?
if ((rc)); then
    grep -E 'ERROR|SUMMARY|Test unit written|artifact' "$AMP_TMP/fuzz.log" | head -n 20 >&2
    fail "fuzzer exit $rc; reproduce: $fuzzer $logdir/fuzz-journal-<crash file>"
fi
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$AMP_TMP/fuzz.log")
rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$AMP_TMP/fuzz.log")
corpus=$(find "$AMP_ROOT/build/fuzz-corpus" -type f | wc -l)
ok "fuzzed ${secs} s: $execs executions ($rate/s), no crash, leak or undefined behaviour; corpus $corpus inputs"
