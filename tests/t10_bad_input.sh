#!/usr/bin/env bash
# Bad input: a one-line error on stderr, a non-zero exit, never a crash.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

A=$AMPTRACE
expect_error "no command"          "$A"
expect_error "unknown command"     "$A" frobnicate
expect_error "unknown flag"        "$A" trace --frobnicate
expect_error "missing value"       "$A" trace -p
expect_error "missing pid"         "$A" trace -p 999999999
expect_error "garbage pid"         "$A" trace -p 12abc
expect_error "negative pid"        "$A" trace -p -5
expect_error "nonexistent device"  "$A" trace --dev nosuchdisk0
expect_error "device path escape"  "$A" trace --dev ../loop0
expect_error "no such device path" "$A" trace --dev /dev/no-such-disk
expect_error "no such mount point" "$A" trace --dev /no/such/dir
expect_error "empty device"        "$A" trace --dev ''
expect_error "not a block device"  "$A" trace --dev /dev/null
expect_error "nonexistent cgroup"  "$A" trace --cgroup /sys/fs/cgroup/no/such/group
expect_error "bad preset"          "$A" trace --preset syslog
expect_error "bad duration"        "$A" trace -d soon
expect_error "zero duration"       "$A" trace -d 0
expect_error "map size too small"  "$A" trace --max-entries 0
expect_error "ringbuf not pow2"    "$A" trace --ringbuf-kb 1000
expect_error "stray argument"      "$A" trace loop0
expect_error "conflicting targets" "$A" trace -p $$ -c bash
expect_error "missing BTF file"    "$A" trace --btf /nonexistent/vmlinux
if command -v capsh >/dev/null && [[ $EUID -eq 0 ]]; then
    expect_error "no CAP_BPF/PERFMON/SYS_ADMIN" \
        capsh --drop=cap_sys_admin,cap_bpf,cap_perfmon -- -c "exec $A trace -d 1"
    grep -q 'CAP_BPF' "$AMP_TMP/err" || fail "privilege error does not name the capability"
else
    echo "note: capsh missing or not root: privilege check not exercised"
fi
"$A" trace --help >/dev/null || fail "--help exits non-zero"
ok "--help exits 0"
