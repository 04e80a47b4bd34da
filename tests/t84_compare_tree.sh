#!/usr/bin/env bash
# amptrace compare's metadata-heavy pair: untar of a generated tree of 300
# files, then rm -rf of it, each with a sync, on ext4 and ext4 without a
# journal.  untar's data class must be exactly the tree's file pages (the
# member sizes of its tar, listed by tarfile); rm -rf writes no data; ext4's
# fs journal class is > 0, the journal-less one's 0, and rm -rf writes more
# bytes with the journal; every row's classes equal the device counter;
# nothing is left behind.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root
command -v tar >/dev/null || skip "tar not installed"

scratch=$AMP_TMP/scratch
mkdir "$scratch"
rc=0
"$AMPTRACE" compare -f ext4,ext4nj -w untar:300,rmrf:300 --settle 2 --scratch "$scratch" \
    --json -v >"$AMP_TMP/compare.json" 2>"$AMP_TMP/compare.log" || rc=$?
grep -v '^amptrace compare: \[.*\] \(run\|started\|stopped\|unmounted\|detached\|removed\)' \
    "$AMP_TMP/compare.log" || true
((rc == 0)) || { tail -n 20 "$AMP_TMP/compare.log" >&2; fail "amptrace compare exited $rc"; }
ok "amptrace compare exited 0"

python3 "$AMP_ROOT/tests/compare_checks.py" results "$AMP_TMP/compare.json" ext4,ext4nj tree \
    untar:300,rmrf:300
python3 "$AMP_ROOT/tests/compare_checks.py" tree "$AMP_TMP/compare.json"
python3 "$AMP_ROOT/tests/compare_checks.py" leftovers "$AMP_TMP/compare.log"
