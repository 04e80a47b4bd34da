#!/usr/bin/env bash
# Full paths for files whose writer closed them before amptrace looked in
# /proc/PID/fd: each `dd` below creates a file, writes it, closes it and
# exits, and its entry reaches the loader only at that exit.  The path
# comes from the kernel's dentry chain plus the mount point (mountinfo):
#  - ext4 mounted where the path has a space (mountinfo escapes it), a
#    file three directories down;
#  - a file unlinked before its first write: "(deleted)", as /proc says;
#  - deeper than the walk goes: ".../" and the last names;
#  - btrfs, a subvolume mounted on its own beside the top level: the path
#    through the subvolume's mount, and two files with the same inode
#    number in two subvolumes kept apart, each with its st_dev.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need_root

# dd_write FILE: one 8 KiB write(), by a process that is gone right after.
dd_write() { dd if=/dev/zero of="$1" bs=8192 count=1 status=none; }

# check_paths: every file in the trace (summary, entries' targets and
# scatter runs) named as $AMP_TMP/want says: "dev ino path" per line.
check_paths() {
    python3 - "$TRACE_OUT" "$AMP_TMP/want" <<'EOF'
import json, sys
trace, want = sys.argv[1:3]
def fail(m): print("FAIL:", m, file=sys.stderr); sys.exit(1)
want = {(l.split(" ", 2)[0], int(l.split(" ", 2)[1])): l.split(" ", 2)[2].rstrip("\n")
        for l in open(want)}
lines = [json.loads(l) for l in open(trace)]
summary = next(l for l in lines if l["type"] == "summary")
seen = {}
for l in lines:
    if l["type"] == "entry":
        named = ([l["file"]] if "file" in l else []) + l["scatter"]
        for f in named:
            seen.setdefault((f["dev"], f["ino"]), set()).add(("entry", f["path"]))
for f in summary["files"]:
    seen.setdefault((f["dev"], f["ino"]), set()).add(("summary", f["path"]))
for key, path in want.items():
    got = seen.get(key)
    if not got:
        fail(f"{key} {path!r} not in the trace: it has {seen}")
    wrong = {(w, p) for w, p in got if p != path}
    if wrong:
        fail(f"{key}: named {sorted(wrong)}, expected {path!r}")
    if {w for w, _ in got} != {"entry", "summary"}:
        fail(f"{key}: named only in {got}")
    print(f"ok: {key[0]} {key[1]}: {path}")
EOF
}

# want FILE [PATH]: FILE's st_dev and inode, to be named PATH (default FILE).
want() { echo "$(stat -c '%Hd:%Ld %i' "$1") ${2:-$1}" >>"$AMP_TMP/want"; }

# --- ext4: a space in the mount point, a deleted file, a deep one.
mnt="$AMP_TMP/mnt point"
make_loopfs ext4 256 "$mnt"
mkdir -p "$mnt/a dir/b/c"
deep=$mnt/$(printf 'd/%.0s' $(seq 1 40))
mkdir -p "$deep"
: >"$AMP_TMP/want"
start_tracer -c dd --dev "$LOOPNAME"
dd_write "$mnt/a dir/b/c/f1"
want "$mnt/a dir/b/c/f1"
exec {fd}>"$mnt/a dir/gone"
ino=$(stat -c %i "$mnt/a dir/gone")
rm "$mnt/a dir/gone"
# dd opens the unlinked file again through the shell's fd, and has no
# copy of its own that /proc/PID/fd could show.
dd if=/dev/zero of="/proc/$$/fd/$fd" bs=8192 count=1 status=none {fd}>&-
echo "$(stat -c '%Hd:%Ld' "$mnt") $ino $mnt/a dir/gone (deleted)" >>"$AMP_TMP/want"
dd_write "$deep/f4"
# The walk keeps AMP_PATH_DEPTH (32) names: f4 and 31 of the d's.
want "$deep/f4" ".../$(printf 'd/%.0s' $(seq 1 31))f4"
sync
stop_tracer
exec {fd}>&-    # only now: its inode number is not given to f4
check_paths
ok "ext4: closed, deleted and too deep files named from the kernel's dentry chain"

# --- btrfs: the subvolume sv mounted on its own too.
top=$AMP_TMP/btrfs-top sub=$AMP_TMP/btrfs-sv
make_loopfs btrfs 320 "$top"
btrfs subvolume create "$top/sv" >/dev/null
_mkdir_tracked "$sub"
mount -o subvol=sv "$LOOPDEV" "$sub"
at_exit _umount_robust "$sub"
# Each subvolume's first inode: the same number in both.
: >"$top/g"
: >"$sub/f2"
mkdir "$sub/deep"
sync
: >"$AMP_TMP/want"
start_tracer -c dd --dev "$LOOPNAME"
dd_write "$top/g"
dd_write "$sub/f2"
dd_write "$sub/deep/f3"
want "$top/g"
want "$sub/f2"
want "$sub/deep/f3"
sync
stop_tracer
[[ $(stat -c %i "$top/g") == "$(stat -c %i "$sub/f2")" ]] ||
    fail "btrfs: $top/g and $sub/f2 have inodes $(stat -c %i "$top/g") and $(stat -c %i "$sub/f2"): no collision tested"
check_paths
ok "btrfs: files of two subvolumes with one inode number kept apart, named through the subvolume's own mount"
