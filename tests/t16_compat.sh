#!/usr/bin/env bash
# Byte compatibility with the build before user/ moved into folders (main
# at f6eff6a; the inputs were recorded by 54b7f66): for the same inputs,
# this build prints exactly what that one printed, kept in
# tests/compat/golden/expected.tar.gz:
#  - a real record (journald 252 and an appending shell on a loop ext4,
#    tests/compat/make-golden.sh): `report` as a table, -j, -q, --info,
#    --svg/--html, and the same record cut short (a killed recorder);
#  - `report --journal` and `explain -t` of the record's `report -j` output
#    against the journal file it wrote (text and JSON, --all-objects,
#    --show-values, --id, --window);
#  - the journal reader's views of that file (--header, --objects,
#    --entries, export, --range, --check);
#  - bad input: the same one-line errors.
# Every case compares exit status, stdout, stderr and the files it wrote.
# Golden files, not a build of the old commit: the test runs in seconds,
# without root, git or a BPF toolchain (also from a release tarball).
# Needs no root: nothing is traced.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
. "$AMP_ROOT/tests/compat/cases.sh"
gold=$AMP_ROOT/tests/compat/golden

compat_inputs "$gold" "$AMP_TMP"
tar -xzf "$gold/expected.tar.gz" -C "$AMP_TMP"
cd "$AMP_TMP"
failed=0
for c in "${COMPAT_CASES[@]}"; do
    read -r name args <<<"$c"
    # shellcheck disable=SC2086  # the arguments are words
    compat_run "$AMPTRACE" "$name" $args >"got.$name"
    if cmp -s "expected/$name" "got.$name"; then
        ok "$name: amptrace $args"
    else
        echo "FAIL: $name: amptrace $args differs from the golden output:" >&2
        diff -u "expected/$name" "got.$name" | head -n 40 >&2 || true
        failed=$((failed + 1))
    fi
done
((failed == 0)) || fail "$failed of ${#COMPAT_CASES[@]} cases differ"
ok "all ${#COMPAT_CASES[@]} cases print what the build before the move printed, byte for byte"
