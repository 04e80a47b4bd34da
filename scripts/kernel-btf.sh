#!/usr/bin/env bash
# scripts/kernel-btf.sh ARCH OUTDIR [SUITE]: another architecture's kernel
# types, for cross-building the BPF object (`make ARCH=arm64`): OUTDIR/
# vmlinux.btf and OUTDIR/vmlinux.h.  From Debian's own kernel package for
# ARCH (SUITE's linux-image-ARCH; bookworm by default), fetched once into
# the qemu guests' cache (scripts/qemu-lib.sh; the arm64 guest boots the
# same kernel).  Its boot image holds the kernel's .BTF section whole,
# found by the BTF header's magic, version and size.  The filesystems and
# dm/md are modules there, not built in as on a development kernel: their
# types come from the modules' own BTF, each dumped on the kernel's and
# merged into one header (a type defined alike twice is kept once; a
# module's enum whose constants another already defines is left out).
# Root (the cache is in /var).
set -euo pipefail
say() { echo "kernel-btf: $*" >&2; }
skip() { say "$*"; exit 77; }
die() { say "error: $*"; exit 1; }
(($# >= 2)) || die "usage: kernel-btf.sh ARCH OUTDIR [SUITE]"
arch=$1 outdir=$2 suite=${3:-bookworm} out=$2/vmlinux.btf
MODULES=(jbd2 ext4 xfs btrfs dm-mod dm-crypt md-mod raid1)
case $arch in arm64) ;; *) die "ARCH $arch: only arm64 is cross-built" ;; esac
((EUID == 0)) || die "must run as root (its kernel package goes to the cache in /var)"
REPO=$(cd "$(dirname "$0")/.." && pwd)
export AMPTRACE_QEMU_ARCH=$arch
# shellcheck source=scripts/qemu-lib.sh
. "$REPO/scripts/qemu-lib.sh"
rc=0
qemu_kernel "$suite" || rc=$?
((rc == 0)) || die "no $suite linux-image-$arch package to be had (network?)"
python3 - "$VMLINUZ" "$out.tmp" <<'PY' || { rm -f "$out.tmp"; die "no BTF in $VMLINUZ"; }
import gzip, struct, sys, zlib
data = open(sys.argv[1], "rb").read()
if data[:2] == b"\x1f\x8b":                     # a gzip'd Image
    data = gzip.decompress(data)
elif data[:2] == b"MZ" and data[4:8] == b"zimg":   # EFI zboot: a PE with the Image inside
    off, size = struct.unpack_from("<II", data, 8)
    if data[24:28] != b"gzip":
        sys.exit(f"zboot payload compressed with {data[24:32]!r}, not gzip")
    data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(data[off:off + size])
# struct btf_header: magic 0xeB9F, version 1, flags 0, hdr_len 24, then
# type_off, type_len, str_off, str_len.
at = data.find(struct.pack("<HBBI", 0xEB9F, 1, 0, 24))
if at < 0:
    sys.exit("no BTF header")
_, _, _, hdr_len, toff, tlen, soff, slen = struct.unpack_from("<HBBIIIII", data, at)
size = hdr_len + max(toff + tlen, soff + slen)
with open(sys.argv[2], "wb") as f:
    f.write(data[at:at + size])
print(f"kernel-btf: {size} bytes of BTF at offset {at} of {sys.argv[1]}", file=sys.stderr)
PY
mv "$out.tmp" "$out"

# The modules' types: each dumped whole (bpftool repeats the kernel's), then
# merged.
tmp=$(mktemp -d)
trap 'rm -rf -- "$tmp"' EXIT
bpftool btf dump file "$out" format c >"$tmp/vmlinux.h"
dumps=()
for m in "${MODULES[@]}"; do
    ko=$(find "$MODDIR" -name "$m.ko*" | head -n 1)
    [[ -n $ko ]] || { say "no module $m in $KPKG: its types left out"; continue; }
    case $ko in
        *.xz) xz -dc "$ko" >"$tmp/$m.ko" ;;
        *.zst) zstd -qdc "$ko" >"$tmp/$m.ko" ;;
        *) cp "$ko" "$tmp/$m.ko" ;;
    esac
    bpftool -B "$out" btf dump file "$tmp/$m.ko" format c >"$tmp/$m.h" ||
        die "bpftool cannot read $m's BTF"
    dumps+=("$tmp/$m.h")
done
python3 - "$tmp/vmlinux.h" "${dumps[@]}" >"$outdir/vmlinux.h.tmp" <<'PY' ||
import re, sys

def blocks(path):
    """bpftool's "format c": a guard, then one definition per paragraph."""
    text = open(path).read()
    head, body = text.split("#endif\n\n", 1)
    body, tail = body.rsplit("\n#ifndef BPF_NO_PRESERVE_ACCESS_INDEX", 1)
    return head, [b.strip("\n") for b in body.split("\n\n") if b.strip()], tail

ENUMERATOR = re.compile(r"^\t(\w+)(?: = [^,]*)?,$", re.M)
head, kernel, tail = blocks(sys.argv[1])
seen, constants, out, added, left = set(kernel), set(), list(kernel), 0, 0
for b in kernel:
    if b.startswith("enum"):
        constants.update(ENUMERATOR.findall(b))
for dump in sys.argv[2:]:
    for b in blocks(dump)[1]:
        if b in seen:
            continue
        seen.add(b)
        if b.startswith("enum"):
            names = set(ENUMERATOR.findall(b))
            if names & constants:   # e.g. each fs's anonymous mount-option enum
                left += 1
                continue
            constants |= names
        out.append(b)
        added += 1
sys.stdout.write(head + "#endif\n\n" + "\n\n".join(out) +
                 "\n\n#ifndef BPF_NO_PRESERVE_ACCESS_INDEX" + tail)
print(f"kernel-btf: {len(kernel)} kernel types, {added} from modules, "
      f"{left} module enums left out", file=sys.stderr)
PY
    { rm -f "$outdir/vmlinux.h.tmp"; die "cannot merge the modules' types"; }
mv "$outdir/vmlinux.h.tmp" "$outdir/vmlinux.h"
