#!/usr/bin/env bash
# scripts/bench_journal.sh: how fast amptrace's journal reader reads a big
# journal file, and with how much memory (target: 1 GiB in under 5 s).
#
#   scripts/bench_journal.sh [--size MiB] [--file PATH] [--regen]
#       Make (or reuse) a journal of --size MiB (1024) at --file
#       (/var/tmp/amptrace-bench/big.journal), then time
#         amptrace explain --stats   (what explain reads: the indexed walk of
#                                     every object, then every entry through
#                                     the entry array, each item's DATA object
#                                     and field name)
#         amptrace explain --check   (all that, plus every hash recomputed)
#         journalctl -o export       (systemd's reader, for comparison)
#       with the file's pages in the page cache ("warm") and evicted ("cold"),
#       and print peak RSS and the ratio to the 5 s target.
#
#   scripts/bench_journal.sh gen FILE [--entries N | --size MiB] [--layout compact|regular]
#                                     [--hash keyed|unkeyed] [--max-size BYTES] [--seed N]
#       Only write a journal file (the tests use this for fuzzing seeds).
#
# The file is written by journald 252's own append code, called in-process
# from libsystemd-shared-252.so (journal_file_open/journal_file_append_entry,
# via Python ctypes): the real on-disk format and growth policy, with no
# socket or client-context cost (a journald daemon here takes ~1k entries/s).
# Appends start at ~40k entries/s and slow down as the file outgrows
# journald's mmap cache: 1 GiB took 30 min on this 2-core VM, so the file is
# kept and reused (--regen to rewrite it).
# Entries look like a busy host's: 40 services with their trusted fields,
# a unique MESSAGE and _SOURCE_REALTIME_TIMESTAMP each, _PID changing now and
# then, one MESSAGE in 200 long enough to be zstd-compressed.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
AMPTRACE=${AMPTRACE:-$ROOT/amptrace}
SHARED_LIB=${SHARED_LIB:-$(ls /usr/lib/x86_64-linux-gnu/systemd/libsystemd-shared-25*.so \
    /lib/systemd/libsystemd-shared-25*.so 2>/dev/null | head -n 1 || true)}

die() { echo "bench_journal: $*" >&2; exit 1; }

gen() {   # FILE [options]: see the top of this file
    local file=$1; shift
    local entries=0 size=0 layout=compact hash=keyed max_size=$((4 << 30)) seed=1
    while (($#)); do
        case $1 in
            --entries) entries=$2; shift 2 ;;
            --size) size=$2; shift 2 ;;
            --layout) layout=$2; shift 2 ;;
            --hash) hash=$2; shift 2 ;;
            --max-size) max_size=$2; shift 2 ;;
            --seed) seed=$2; shift 2 ;;
            *) die "gen: unknown option $1" ;;
        esac
    done
    [[ -n $SHARED_LIB && -e $SHARED_LIB ]] || die "no libsystemd-shared-25x.so (systemd 252 needed)"
    ((entries > 0 || size > 0)) || die "gen: give --entries N or --size MiB"
    rm -f "$file"
    # The library reads these at file creation, as journald does.
    SYSTEMD_JOURNAL_COMPACT=$([[ $layout == compact ]] && echo 1 || echo 0) \
    SYSTEMD_JOURNAL_KEYED_HASH=$([[ $hash == keyed ]] && echo 1 || echo 0) \
        python3 - "$SHARED_LIB" "$file" "$entries" "$size" "$max_size" "$seed" <<'EOF'
import ctypes as C, os, random, sys, time

lib_path, path, entries, size_mib, max_size, seed = sys.argv[1:7]
entries, size, max_size = int(entries), int(size_mib) << 20, int(max_size)
rnd = random.Random(int(seed))
lib = C.CDLL(lib_path)

class Metrics(C.Structure):     # JournalMetrics, systemd 252
    _fields_ = [(n, C.c_uint64) for n in
                ("max_size", "min_size", "max_use", "min_use", "keep_free", "n_max_files")]
class DualTs(C.Structure):
    _fields_ = [("realtime", C.c_uint64), ("monotonic", C.c_uint64)]
class Iovec(C.Structure):
    _fields_ = [("base", C.c_char_p), ("len", C.c_size_t)]

lib.mmap_cache_new.restype = C.c_void_p
# int journal_file_open(int fd, const char *fname, int open_flags,
#     JournalFileFlags file_flags, mode_t mode, uint64_t compress_threshold_bytes,
#     JournalMetrics *metrics, MMapCache *mmap_cache, JournalFile *template,
#     JournalFile **ret);                                   (systemd 252)
lib.journal_file_open.argtypes = [C.c_int, C.c_char_p, C.c_int, C.c_int, C.c_uint, C.c_uint64,
                                  C.c_void_p, C.c_void_p, C.c_void_p, C.POINTER(C.c_void_p)]
# int journal_file_append_entry(JournalFile *f, const dual_timestamp *ts,
#     const sd_id128_t *boot_id, const struct iovec iovec[], unsigned n_iovec,
#     uint64_t *seqnum, Object **ret, uint64_t *ret_offset);   (systemd 252)
lib.journal_file_append_entry.argtypes = [C.c_void_p, C.POINTER(DualTs), C.c_void_p,
                                          C.POINTER(Iovec), C.c_uint, C.POINTER(C.c_uint64),
                                          C.c_void_p, C.c_void_p]
lib.journal_file_close.argtypes = [C.c_void_p]

# min_size 1 MiB keeps small test files small; compress from 512 B like journald.
metrics = Metrics(max_size, 1 << 20, max_size * 4, 0, 0, 100)
jf = C.c_void_p()
r = lib.journal_file_open(-1, path.encode(), os.O_RDWR | os.O_CREAT, 1, 0o640, 512,
                          C.byref(metrics), lib.mmap_cache_new(), None, C.byref(jf))
if r < 0:
    sys.exit(f"journal_file_open({path}): {os.strerror(-r)}")

boot = (C.c_ubyte * 16)(*rnd.randbytes(16))
machine = rnd.randbytes(16).hex()
words = "disk queue worker request timeout retry socket session cache flush commit " \
        "user login accepted closed started stopped reload config sync batch".split()
services = []
for s in range(40):
    name = f"svc{s:02d}"
    services.append([f"_MACHINE_ID={machine}", "_HOSTNAME=benchhost",
                     f"_TRANSPORT={rnd.choice(['journal', 'stdout', 'syslog'])}",
                     f"_UID={rnd.choice([0, 100, 1000])}", f"_GID={rnd.choice([0, 100, 1000])}",
                     f"_COMM={name}", f"_EXE=/usr/bin/{name}", f"_CMDLINE=/usr/bin/{name} --serve",
                     "_CAP_EFFECTIVE=0", f"_SYSTEMD_CGROUP=/system.slice/{name}.service",
                     f"_SYSTEMD_UNIT={name}.service", "_SYSTEMD_SLICE=system.slice",
                     f"_SYSTEMD_INVOCATION_ID={rnd.randbytes(16).hex()}",
                     f"SYSLOG_IDENTIFIER={name}", "SYSLOG_FACILITY=3"])
fixed = [[f.encode() for f in svc] for svc in services]
pids = [rnd.randint(300, 60000) for _ in services]

n_fixed = len(fixed[0])
iov = (Iovec * (n_fixed + 4))()
seq = C.c_uint64(0)
ts = DualTs(1_700_000_000_000_000, 1_000_000)
t0, i = time.time(), 0
while True:
    if entries and i >= entries:
        break
    if size and i % 4096 == 0 and os.path.getsize(path) >= size:
        break
    s = rnd.randrange(len(services))
    if rnd.random() < 0.0005:
        pids[s] = rnd.randint(300, 60000)
    msg = " ".join(rnd.choice(words) for _ in range(rnd.randint(4, 14)))
    if i % 200 == 199:
        msg += " " + "detail " * 180          # > 512 B: stored compressed
    var = [f"MESSAGE={msg} #{i}".encode(), f"PRIORITY={rnd.choice([3, 4, 6, 6, 6, 7])}".encode(),
           f"_PID={pids[s]}".encode(), f"_SOURCE_REALTIME_TIMESTAMP={ts.realtime - 37}".encode()]
    for k, f in enumerate(fixed[s] + var):
        iov[k].base = f
        iov[k].len = len(f)
    ts.realtime += rnd.randint(20, 400)
    ts.monotonic += 250
    r = lib.journal_file_append_entry(jf, C.byref(ts), boot, iov, n_fixed + 4, C.byref(seq),
                                      None, None)
    if r < 0:
        sys.exit(f"journal_file_append_entry: {os.strerror(-r)} after {i} entries")
    i += 1
lib.journal_file_close(jf)
dt = time.time() - t0
print(f"gen: {path}: {i} entries, {os.path.getsize(path) >> 20} MiB in {dt:.1f} s "
      f"({i / max(dt, 1e-9):.0f} entries/s)", file=sys.stderr)
EOF
}

[[ ${1:-} == gen ]] && { shift; (($#)) || die "gen: no FILE"; gen "$@"; exit 0; }

size=1024 file=/var/tmp/amptrace-bench/big.journal regen=0
while (($#)); do
    case $1 in
        --size) size=$2; shift 2 ;;
        --file) file=$2; shift 2 ;;
        --regen) regen=1; shift ;;
        -h|--help) sed -n '2,/^set -e/p' "$0" | sed 's/^# \{0,1\}//; /^set -e/d'; exit 0 ;;
        *) die "unknown option $1 (try --help)" ;;
    esac
done
[[ -x $AMPTRACE ]] || die "$AMPTRACE not built (make)"
mkdir -p "$(dirname "$file")"
if ((regen)) || [[ ! -s $file ]] || (($(stat -c %s "$file") < (size << 20))); then
    echo "generating a ${size} MiB journal at $file (journald's own append code)..."
    gen "$file" --size "$size"
fi
bytes=$(stat -c %s "$file")

# Evict just this file from the page cache (not the whole machine's).
evict() { dd if="$1" iflag=nocache count=0 status=none 2>/dev/null || true; }
# run LABEL CMD...: wall time and peak RSS (KiB) of CMD, output discarded.
run() {
    local label=$1 t0 t1 rss tf; shift
    tf=$(mktemp)
    t0=$(date +%s.%N)
    /usr/bin/time -f '%M' -o "$tf" "$@" >/dev/null 2>&1 || die "$label failed: $*"
    t1=$(date +%s.%N)
    rss=$(tail -n 1 "$tf")
    rm -f "$tf"
    awk -v l="$label" -v a="$t0" -v b="$t1" -v r="$rss" -v by="$bytes" 'BEGIN {
        s = b - a; printf "  %-34s %7.2f s  %7.0f MiB/s  %5.2fx of 5 s  peak RSS %6.1f MiB\n",
        l, s, by / 1048576 / s, s / 5, r / 1024 }'
}

echo "file: $file, $((bytes >> 20)) MiB"
"$AMPTRACE" explain --header "$file" | sed 's/^/  /'
echo "times (warm: file in page cache; cold: its pages evicted first):"
evict "$file"
run "amptrace explain --stats (cold)" "$AMPTRACE" explain --stats "$file"
run "amptrace explain --stats (warm)" "$AMPTRACE" explain --stats "$file"
evict "$file"
run "amptrace explain --check (cold)" "$AMPTRACE" explain --check "$file"
run "amptrace explain --check (warm)" "$AMPTRACE" explain --check "$file"
run "journalctl -o export (warm)" journalctl --file "$file" -o export
echo "memory of the reader itself (anonymous: index and maps; file: mapped page cache):"
"$AMPTRACE" explain --stats "$file" | sed 's/^/  /'
