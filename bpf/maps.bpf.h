/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Maps and load-time configuration shared by every stage.  Sizes here are
 * defaults; the loader resizes each map from the command line before load.
 */
#ifndef AMPTRACE_MAPS_BPF_H
#define AMPTRACE_MAPS_BPF_H

/*
 * What the per-syscall and per-folio paths read, all in one page: .data.
 * Each global section is a map of its own, each map value its own page
 * (mmapable: vmalloc'd, 4 KiB pages), and on this kind of guest every
 * syscall flushes the TLB (no PCID), so each page a program reaches is a
 * page walk on its first touch (scripts/bench/README.md).  These settings
 * were in .rodata, the counters below in .data and .bss: three pages per
 * syscall where one does.  The settings are set by the loader before load
 * (skeleton's data) and never written after; what the verifier must see as
 * a constant (a program's or a type's presence) stays in .rodata.
 */
#define AMP_HOT __attribute__((section(".data")))

volatile __u32 self_tgid AMP_HOT = 0;	/* never trace the tracer itself */
volatile bool filter_pid AMP_HOT = false;
volatile bool filter_comm AMP_HOT = false;
volatile bool filter_cgroup AMP_HOT = false;
volatile bool filter_dev AMP_HOT = false;
volatile char target_comm[AMP_COMM_LEN] AMP_HOT = {};
/* --dev's stack, as kernel dev_t (major << 20 | minor): disks (what a
 * request's and a folio's gendisk is) and partitions and dm or md devices
 * (what a superblock's s_dev and jbd2's dev are).  [0] is the named
 * device's disk: a whole-disk trace compares once. */
volatile __u32 target_devs[AMP_MAX_TARGET_DEVS] AMP_HOT = {};
volatile __u32 nr_target_devs AMP_HOT = 0;
volatile __u64 ringbuf_quarter AMP_HOT = 1 << 18;	/* a quarter of the events ring */
volatile __u32 settle_slot_mask AMP_HOT = (1 << 17) - 1;	/* unsettled's size - 1 */
volatile __u32 folio_table_mask AMP_HOT = (1 << 18) - 1;	/* folio_table's size - 1 */
/* Receives are traced: keep exited processes' names (exited_procs). */
volatile bool track_senders AMP_HOT = false;
/* --preset write: receives of a traced writer name its writes' senders
 * (bpf/relay.bpf.h) and open no entry. */
volatile bool relay_links AMP_HOT = false;
/* Relays seen receiving (relay_rings' entries made): until one, a write
 * looks nothing up for its sender. */
volatile __u32 relays_seen AMP_HOT = 0;

/* Set by the loader through the skeleton's rodata before load. */
const volatile __u32 page_size = 4096;
const volatile __u32 walk_max_steps = 4096;	/* bvec chunks per request */
/* A request's or bio's operation (enum req_op) in its opf. */
#define AMP_REQ_OP_MASK 0xff

/* Address of xfs's log-write completion (xlog_bio_end_io) from kallsyms:
 * bios that end there are xfs log writes, its journal.  0: unknown. */
const volatile __u64 xfs_log_end_io = 0;
/* xfs's metadata buffer write completion (xfs_buf_bio_end_io), likewise:
 * bios that end there write back logged buffers in place. */
const volatile __u64 xfs_buf_end_io = 0;
/* dm's completions, likewise (stack.bpf.h): a dm target's clone
 * (clone_endio, dm_mod) and dm-crypt's encrypted write (crypt_endio,
 * dm_crypt).  0: no such module loaded, or no kallsyms. */
const volatile __u64 dm_clone_end_io = 0;
/* dm's block major (/proc/devices), where dm is walked: whose failed bios
 * on_bio_failed charges. */
const volatile __u32 dm_major = 0;
const volatile __u64 dm_crypt_end_io = 0;
/* Their structs' members, as byte offsets from BTF (the loader's). */
const volatile __u32 dm_tio_clone_off = 0;	/* dm_target_io.clone */
const volatile __u32 dm_tio_io_off = 0;		/* dm_target_io.io */
const volatile __u32 dm_io_orig_bio_off = 0;	/* dm_io.orig_bio */
const volatile __u32 dm_crypt_io_base_bio_off = 0;	/* dm_crypt_io.base_bio */
/* md RAID1's write to one leg (raid1_end_write_request, raid1), and the
 * clone md accounts a bio by (md_end_clone_io, md_mod; 6.5+), likewise. */
const volatile __u64 md_raid1_end_io = 0;
const volatile __u64 md_clone_end_io = 0;
/* md's superblock write to a member (super_written, md_mod): the array's
 * own metadata, which 6.x tags REQ_META and 5.15 does not. */
const volatile __u64 md_super_end_io = 0;
const volatile __u32 r1bio_master_bio_off = 0;	/* r1bio.master_bio */
const volatile __u32 r1bio_mddev_off = 0;	/* r1bio.mddev */
const volatile __u32 mddev_raid_disks_off = 0;	/* mddev.raid_disks */
const volatile __u32 mddev_degraded_off = 0;	/* mddev.degraded */
const volatile __u32 md_io_clone_orig_off = 0;	/* md_io_clone.orig_bio */
const volatile __u32 md_io_clone_bio_off = 0;	/* md_io_clone.bio_clone */

/* Set by the loader while it starts (user/startup.c): entries opened
 * meanwhile are its own cost (AMP_ENTRY_OWN), e.g. journald storing the
 * audit records of amptrace's program loads. */
__u32 startup_own AMP_HOT = 0;
/* Whether page_owners holds anything (see there): read per folio, written
 * only when a window overflows, so it stays with the settings. */
__u64 overflow_live AMP_HOT = 0;

/*
 * The counters every entry (and every dirtying entry) adds to: on a cache
 * line of their own, after the settings.  On the settings' line each
 * atomic add took the line from the other CPUs, whose every syscall and
 * folio program then missed it (false sharing).  Globals of one section
 * are laid out in declaration order: nothing after these is read per
 * syscall or per folio.
 */
/* Source of entry ids; 0 means "no entry". */
__u64 next_entry_id AMP_HOT __attribute__((aligned(64))) = 1;
/* Where the next settlement looks for a free slot in `unsettled`. */
__u32 next_settle_slot AMP_HOT = 0;
/* The block-device pseudo-filesystem's own (anonymous) s_dev, set by the
 * dirtying stage at its first folio: user space names an inode a block
 * device only on this device (user/sys/paths.c), not any major-0 one (a
 * tmpfs file whose inode number is some disk's dev_t).  Written once and
 * read for block-device folios only: off the settings' line. */
__u32 bdevfs_dev AMP_HOT = 0;

/*
 * Metadata pages (block-device, directory) an untraced user process
 * dirtied itself, e.g. ext4 without a journal allocating its inodes: their
 * write-out is that process's, never shared by window among the traced
 * entries.  A bit per hash of the page, cleared when it is written; a
 * collision only leaves such bytes to the window rule, as before.  (With
 * a journal, jbd2 dirties the metadata it checkpoints, a kernel thread.)
 */
#define AMP_META_WORDS (1 << 12)	/* 2^18 bits, 32 KiB */
__u64 meta_untraced_bits[AMP_META_WORDS];

/* syscall number -> enum amp_syscall_kind, filled from the chosen preset. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, AMP_MAX_SYSCALLS);
	__type(key, __u32);
	__type(value, __u8);
} syscall_kinds SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);	/* tgid */
	__type(value, __u8);
} target_pids SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} target_cgroup SEC(".maps");

/* A logging syscall in flight on a thread, between enter and exit. */
struct pending_syscall {
	__u64 arg_ptr;		/* recvmmsg: the mmsghdr array */
	__u64 fd_ino;
	__u32 fd_dev;
	__s32 nr;
	/* Folios of the target file this syscall dirtied: added to its
	 * per-file totals at exit, in the one lookup that adds its bytes. */
	__u32 folios_dirtied;
	__u32 pages_dirtied;
	__u8 kind;
	bool kmsg;		/* a read of /dev/kmsg: the kernel's records */
	__u8 __pad[6];
};

/* A thread's additions to its last written file's totals, not yet in
 * `files` (see struct amp_thread). */
struct amp_file_delta {
	__u64 entries;
	__u64 syscall_bytes;
	__u64 folios_dirtied;
	__u64 pages_dirtied;
	__u64 last_entry;	/* to count each entry once */
};

/*
 * Per traced thread: its logging syscall in flight and its open entry, in
 * task-local storage rather than hash maps keyed by tid.  sys_exit looks
 * here on every syscall of the system, and for an untraced thread that is
 * one pointer load; the fields are then written in place, with no bucket
 * lock (which disables interrupts: on a paravirtualised guest, a hypercall
 * per map update).
 */
struct amp_thread {
	struct pending_syscall p;	/* p.kind == AMP_SYS_NONE: none in flight */
	__u64 entry_id;			/* its open entry, 0 if none */
	bool entry_unsettled;		/* it dirtied a folio: in `unsettled` too */
	__u8 __pad[3];
	__u32 settle_slot;		/* its slot there */
	/* The file of its last write, known to be in `files` and not
	 * excluded (the loader marks exclusions before attaching): a logger
	 * writes one file, so most writes need no lookup at enter. */
	struct amp_file_key last_file;
	/* What its writes add to that file, kept here so that a write's exit
	 * needs no lookup either; added to `files` when it writes another
	 * file, when it exits, and when tracing ends. */
	struct amp_file_delta file_delta;
	/* A handle it opened with no entry open (journald creating and
	 * sizing its file before its first entry): its next entry's. */
	struct amp_entry_txn early_txn;
	struct amp_entry open;		/* the open entry */
};

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct amp_thread);
} threads SEC(".maps");

/*
 * Entries that dirtied folios, from their first until their last folio is
 * written: what the block layer charges.  An entry that dirties nothing
 * (most appends land in a page already dirty) never comes here.  Slots of
 * an array, taken in turn and marked by the entry's id (0: free), not a
 * hash: the insert per dirtying entry and the lookup per written folio
 * were two hash operations of ~230 ns each.  Its size is a power of 2;
 * the loader maps it to sweep entries whose folios never came.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 17);	/* --max-entries, rounded up */
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct amp_settle);
} unsettled SEC(".maps");

/*
 * Dirty folios of traced entries, until their write-out is seen: a slot
 * of folio_table each (see folios.bpf.h).  32 bytes, two to a cache line.
 */
struct amp_folio_slot {
	__u64 tag;		/* the folio's (folio_tag), | busy bit; 0: free */
	__u64 entry_id;		/* its owner */
	__u32 settle_slot;	/* the owner's struct amp_settle in `unsettled` */
	__u32 bytes_written;
	__u16 npages;
	__u16 run;		/* slot in the entry's runs[], or 0xffff */
	__u8 kind;		/* enum amp_page_kind */
	__u8 written;		/* 1: its entry stopped waiting for it (its first bytes,
				 * or a RAID1's last byte of the last copy) */
	__u8 has_next;		/* page_next_owners holds its next owner */
	__u8 homed;		/* folios whose home this is, dirtied since the start */
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 18);	/* --max-pages, rounded up to a power of 2 */
	__type(key, __u32);
	__type(value, struct amp_folio_slot);
} folio_table SEC(".maps");

/*
 * The next owner of a folio dirtied again while its write-out is in flight
 * (PG_writeback, nothing of its owner written yet): the request on its way
 * holds the current owner's bytes, so that owner keeps the folio until the
 * completion, which hands it to this one (slot's has_next).  Rare (an
 * append to a log's last folio during a flush or a sync): a hash, with its
 * lock.  At most one per folio: another clean -> dirty needs another
 * write-out, which cannot start before this one completes.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct amp_page_key);
	__type(value, struct amp_page_owner);
} page_next_owners SEC(".maps");

/* Folios whose window in folio_table was full: a hash, with its locks.
 * overflow_live counts what it holds, so that nobody looks while empty. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);	/* --max-pages / 8, at least 16 */
	__type(key, struct amp_page_key);
	__type(value, struct amp_page_owner);
} page_owners SEC(".maps");

/*
 * Pages the traced processes dirtied while amptrace started, put here by
 * the loader (user/startup.c), each owned by one entry of amptrace's own
 * (AMP_ENTRY_OWN): with kernel audit on, journald storing the audit
 * records of amptrace's program loads.  Keyed by page, not folio: user
 * space sees pages.  Looked up only for unowned file pages not dirtied
 * since the start, which are rare once the first write-back has passed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, struct amp_page_key);
	__type(value, struct amp_page_owner);
} startup_pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct amp_file_key);
	__type(value, struct amp_file_stats);
} files SEC(".maps");

/* Where each file of `files` lies in its filesystem (one entry per file,
 * sized like `files`). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct amp_file_key);
	__type(value, struct amp_file_path);
} file_paths SEC(".maps");

/* Room to build one: a name may be read at any offset below
 * AMP_PATH_LEN, AMP_PATH_LEN bytes long, so the buffer has twice that. */
struct amp_path_scratch {
	struct amp_file_path p;
	char spill[AMP_PATH_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct amp_path_scratch);
} path_scratch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);	/* disk dev_t, kernel encoding */
	__type(value, struct amp_dev_stats);
} devs SEC(".maps");

/* A bio whose bytes belong to a filesystem transaction: its journal blocks
 * (jbd2's, xfs's log) or metadata it writes in place (btrfs superblocks). */
struct amp_fs_bio {
	struct amp_txn_key txn;	/* {0, 0}: outside a known transaction (by window) */
	__u32 fs;		/* enum amp_txn_fs */
	__u32 meta;		/* 1: the txn's meta_bytes, class metadata;
				 * 0: its journal_bytes, class journal */
	/* Metadata one process wrote for itself (a btrfs log sync's
	 * superblock): an entry's own (entry_id, its settlement's slot), or an
	 * untraced process's; else the transaction's. */
	__u64 entry_id;
	__u32 settle_slot;
	__u32 untraced;
	/* A RAID1's: the legs that have walked it so far (each writes a
	 * copy, each needs the tags; the last one deletes them). */
	__u32 copies_seen;
	__u32 __pad;
};

/* A new disk's zeroed struct amp_dev_stats, built here, not on the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct amp_dev_stats);
} dev_scratch SEC(".maps");

/* Processes that exited while receives were traced, by tgid: who a
 * received record's sender was, once it is gone (sender.bpf.h).  The
 * oldest go first; user space names a sender seconds after its record. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct amp_exited_proc);
} exited_procs SEC(".maps");

/* Where an exit's record is made: too big for the stack. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct amp_exited_proc);
} exited_scratch SEC(".maps");

/* Bios of a filesystem transaction, from queue to completion (the jbd2
 * thread's, among others). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 8192);
	__type(key, __u64);
	__type(value, struct amp_fs_bio);
} fs_bios SEC(".maps");

/* Filesystem transactions from their first handle to the end of their commit. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1024);
	__type(key, struct amp_txn_key);
	__type(value, struct amp_txn_stats);
} txns SEC(".maps");

/* A zeroed amp_txn_stats to insert from (never written): its 248 bytes
 * off the stack of the block walk's frames, which share 512 bytes. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct amp_txn_stats);
} txn_zero SEC(".maps");
/* The same for btrfs_entry_own's values (btrfs.bpf.h), in .bss. */
struct amp_btrfs_own btrfs_own_zero = {};

/* jbd2 thread (tid) -> the transaction it is committing. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u32);
	__type(value, struct amp_txn_key);
} jbd2_committing SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct amp_stats);
} stats SEC(".maps");

/* One record per finished entry. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20);	/* --ringbuf-kb */
} events SEC(".maps");

#define STAT_INC(field)                                            \
	do {                                                       \
		__u32 zero__ = 0;                                  \
		struct amp_stats *s__ = bpf_map_lookup_elem(&stats, &zero__); \
		if (s__)                                           \
			s__->field++;                              \
	} while (0)

#endif /* AMPTRACE_MAPS_BPF_H */
