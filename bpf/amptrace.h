/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Every struct that crosses the kernel/user boundary.  Plain fixed-size
 * types and explicit padding only: this header is compiled by clang for
 * BPF and by the host compiler for the loader, and both must agree on
 * the layout byte for byte.
 */
#ifndef AMPTRACE_H
#define AMPTRACE_H

#define AMP_COMM_LEN	 16
#define AMP_DISK_NAME_LEN 32
/* --dev: the block devices of the named device's stack (its disks, their
 * partitions, dm and md layers above or below it) the kernel side checks. */
#define AMP_MAX_TARGET_DEVS 16
#define AMP_SCATTER_MAX	 48	/* folio runs kept inline per entry */
#define AMP_MAX_SYSCALLS 512	/* size of the syscall -> kind table */
#define AMP_ENTRY_TXNS	 4	/* fs journal transactions kept per entry */
#define AMP_PREFAULT_RECS 128	/* records prefault_events reserves a run */
#define AMP_PREFAULT_REC_SIZE 2048	/* bytes each (two pages touched at most) */
#define AMP_TXN_FILES	 4	/* traced files a transaction's kernel-thread handles name */

/* Ring-buffer record kinds: every record starts with a __u32 type. */
enum amp_rec_type {
	AMP_REC_ENTRY = 1,	/* struct amp_entry: a finished, settled entry */
	AMP_REC_TXN = 2,	/* struct amp_txn_rec: a committed jbd2 transaction */
	AMP_REC_SETTLED = 3,	/* struct amp_settle: an entry's pages all written */
	AMP_REC_TXN_LATE = 4,	/* struct amp_txn_late: a sent transaction wrote more */
};

/* What a traced syscall does to entries. */
enum amp_syscall_kind {
	AMP_SYS_NONE = 0,
	AMP_SYS_WRITE = 1,	/* write-family on a regular file: opens at enter */
	AMP_SYS_RECV = 2,	/* read on a socket or /dev/kmsg: opens at exit when ret > 0 */
	AMP_SYS_RECVMMSG = 3,	/* like RECV, bytes summed from the mmsghdr array */
	AMP_SYS_SOCKRECV = 4,	/* like RECV on a socket-only syscall: nothing to
				 * check or keep at enter, so the exit alone does */
	AMP_SYS_RECVMSG = 5,	/* SOCKRECV with a msghdr (recvmsg): its control
				 * messages name the sender */
};

/* How a received record's sender is known (struct amp_entry.sender_how). */
enum amp_sender_how {
	AMP_SENDER_NONE = 0,	/* not a receive, or the record came with no
				 * credentials (a read of a stream socket, a
				 * socket without SO_PASSCRED) */
	AMP_SENDER_CREDS = 1,	/* the SCM_CREDENTIALS the kernel attached: a
				 * datagram's sender, a stream's writer */
	AMP_SENDER_KERNEL = 2,	/* the kernel: /dev/kmsg, a netlink socket
				 * (audit), credentials of pid 0 */
	/* A relay's write (bpf/relay.bpf.h): its linked receives came from
	 * more than one sender. */
	AMP_SENDER_SEVERAL = 3,
};

/*
 * A process that exited while receives were traced (group leaders only):
 * a short-lived sender (logger, a cron job) is gone before user space
 * names it, and a stopped service's cgroup with it, so its name and its
 * cgroup's path are kept here, by pid.
 */
#define AMP_CG_DEPTH	8	/* cgroup path components kept */
#define AMP_CG_NAME_LEN	80	/* per component: a container's 64-hex id fits */
struct amp_exited_proc {
	__u64 start_ns;		/* its start, CLOCK_BOOTTIME: a pid reused since
				 * is told from it */
	__u64 exit_ns;		/* CLOCK_BOOTTIME */
	__u64 cgroup_id;	/* its cgroup v2 id, 0 if none */
	char comm[AMP_COMM_LEN];
	__u32 cg_depth;		/* components in cg_names, the leaf first */
	__u32 cg_deeper;	/* 1: the path had more, nearer the root */
	char cg_names[AMP_CG_DEPTH][AMP_CG_NAME_LEN];
};

/* Device byte classes; they sum to the device's written-sector counter. */
enum amp_class {
	AMP_CLASS_DATA = 0,	/* file pages dirtied by a traced entry */
	AMP_CLASS_METADATA = 1,	/* bdev/dir/btree pages, REQ_META */
	AMP_CLASS_JOURNAL = 2,	/* submitted by the fs journal thread (jbd2) */
	AMP_CLASS_OTHER = 3,	/* untraced writers since the start, direct I/O, unwalked */
	AMP_CLASS_BEFORE_START = 4,	/* file pages dirtied before tracing started */
	AMP_CLASS_FAILED = 5,	/* writes the device or a dm/md layer failed: the
				 * counter counts them, the disk holds none of it */
	AMP_NR_CLASSES = 6,
};

/* An entry's own device bytes: data and metadata, and in the slot that
 * would be journal's (an entry has none of its own) the bytes of its
 * folios whose write failed; other's slot is unused, kept for the record
 * format. */
#define AMP_ENTRY_CLASSES 4
#define AMP_ENTRY_FAILED_SLOT 2

/* Kind of a dirtied page, as recorded in an entry's scatter list. */
enum amp_page_kind {
	AMP_PAGE_FILE = 0,	/* regular-file page: its write-out is data */
	AMP_PAGE_META = 1,	/* block-device or directory page: metadata */
};

/* Entry flags. */
#define AMP_ENTRY_CLOSED	(1u << 0)	/* the thread moved on or exited */
#define AMP_ENTRY_FAILED	(1u << 1)	/* the write syscall returned <= 0 */
#define AMP_ENTRY_DRAINED	(1u << 2)	/* reported at exit or timeout, not settled */
#define AMP_ENTRY_UNSETTLED	(1u << 3)	/* kernel record at close: folios still
						 * unwritten, an AMP_REC_SETTLED follows */
#define AMP_ENTRY_OWN		(1u << 4)	/* amptrace's own cost: opened while it
						 * started (see user/startup.c) */

/* One dirtied folio: (file, page offset) and its size in pages. */
struct amp_page_run {
	__u64 ino;
	__u64 index;		/* page index of the folio's first page */
	__u32 dev;		/* the file's st_dev (inode_dev()), kernel encoding
				 * (major << 20 | minor) */
	__u16 npages;
	__u8 kind;		/* enum amp_page_kind */
	__u8 written;		/* 1 once its first device bytes were seen */
};

/* Handles an entry opened in one jbd2 transaction. */
struct amp_entry_txn {
	__u32 dev;		/* the journaled filesystem's device */
	__u32 tid;
	__u32 handles;
	__u32 __pad;
};

/*
 * One logging syscall and everything charged to it.  The kernel keeps it in
 * its thread's state while open and sends it when the thread closes it,
 * with only the scatter slots in use; the device-side counters of an entry
 * that dirtied folios come later, in its struct amp_settle, and user space
 * merges the two (AMP_ENTRY_UNSETTLED marks an entry waiting for that).
 */
struct amp_entry {
	__u32 type;		/* AMP_REC_ENTRY */
	__u32 disk;		/* disk of the first page it dirtied (kernel dev_t), 0 if none */
	__u64 id;
	__u64 start_ns;		/* CLOCK_BOOTTIME it opened: a write's enter, a receive's return */
	__u64 end_ns;		/* when the next logging syscall closed it */
	__u32 pid;		/* tgid */
	__u32 tid;
	char comm[AMP_COMM_LEN];
	__s32 syscall_nr;
	__u32 flags;		/* AMP_ENTRY_* */
	__s64 bytes;		/* syscall return value */
	__u64 fd_ino;		/* target file of a write (0 for sockets) */
	__u32 fd_dev;
	__u32 pages_dirtied;	/* sum of the folio sizes first-dirtied */
	__u32 folios_dirtied;
	__u32 folios_written;
	__u32 write_faults;
	__u32 ios;		/* requests that carried its pages */
	__u64 dev_bytes[AMP_ENTRY_CLASSES];
	__s32 outstanding;	/* folios not yet written (plus a bias while open) */
	__u32 nr_runs;
	__u32 runs_dropped;	/* folios beyond AMP_SCATTER_MAX */
	__u32 nr_txns;
	__u32 txns_dropped;	/* transactions beyond AMP_ENTRY_TXNS */
	/* Who sent a received record (enum amp_sender_how says how it is
	 * known): the sending process's tgid and uid, as the kernel gave
	 * them to the receiver.  A write's sender is its own process, or,
	 * for a relay (rsyslog; sender_how set), the sender of the receives
	 * it links to (sender_links of them, at most 255; 0: of the one its
	 * file's last write took ahead of it: bpf/relay.bpf.h). */
	__u32 sender_pid;
	__u32 sender_uid;
	__u8 sender_how;
	__u8 sender_links;
	__u8 __pad[2];
	struct amp_entry_txn txns[AMP_ENTRY_TXNS];
	struct amp_page_run runs[AMP_SCATTER_MAX];
};

/*
 * What the block layer adds to an entry that dirtied folios, from its first
 * folio until the last one is written (or it times out): small, because
 * at 100k entries/s tens of thousands wait for write-back at once.  Sent
 * as AMP_REC_SETTLED when the last reference goes.  In `unsettled`, id 0
 * marks a free slot.
 */
struct amp_settle {
	__u32 type;		/* AMP_REC_SETTLED */
	__s32 outstanding;	/* folios not yet written (plus a bias while open) */
	__u64 id;
	__u64 closed_ns;	/* CLOCK_BOOTTIME its thread closed it, 0 while open */
	__u64 dev_bytes[2];	/* data, metadata charged to it */
	__u64 runs_written;	/* bit i: runs[i] had its first device bytes */
	__u32 ios;		/* requests that carried its pages */
	__u32 folios_written;
	__u64 failed_bytes;	/* of its folios, in writes that failed (not in dev_bytes) */
};

/*
 * A filesystem transaction: who opened handles in it, what its commit wrote.
 * jbd2: (journal device, tid); btrfs: (superblock s_dev, transid); xfs:
 * (device, CIL sequence).
 */
struct amp_txn_key {
	__u32 dev;
	__u32 tid;
};

/* Which filesystem's transaction (struct amp_txn_stats.fs). */
enum amp_txn_fs {
	AMP_FS_JBD2 = 1,
	AMP_FS_BTRFS = 2,
	AMP_FS_XFS = 3,
	AMP_FS_EXT4NJ = 4,	/* ext4 without a journal: a traced file's stand-in
				 * transaction (bpf/nojournal.bpf.h) */
};

/* Kernel-thread handles for one traced file (ext4 and xfs name the inode
 * first): shared by the entries that dirtied that file. */
struct amp_txn_file {
	__u64 ino;		/* 0: free slot */
	__u32 dev;		/* as in struct amp_file_key */
	__u32 handles;
};

/* btrfs trees, by the root objectid of a written block (see btrfs.bpf.h). */
enum amp_btrfs_tree {
	AMP_BTRFS_T_FS = 0,	/* fs tree and subvolumes */
	AMP_BTRFS_T_EXTENT = 1,
	AMP_BTRFS_T_CSUM = 2,
	AMP_BTRFS_T_FREE_SPACE = 3,
	AMP_BTRFS_T_ROOT = 4,
	AMP_BTRFS_T_LOG = 5,	/* fsync's log trees and the log root tree */
	AMP_BTRFS_T_CHUNK = 6,
	AMP_BTRFS_T_DEV = 7,
	AMP_BTRFS_T_BLOCK_GROUP = 8,
	AMP_BTRFS_T_OTHER = 9,	/* uuid, quota, relocation */
	AMP_BTRFS_T_SUPER = 10,	/* superblock copies */
	AMP_BTRFS_T_UNKNOWN = 11,	/* a block copied before the start */
	AMP_BTRFS_TREES = 12,
};

struct amp_txn_stats {
	__u64 handles_traced;	/* opened by threads with an entry */
	__u64 handles_untraced;	/* by window: by kernel threads for no traced
				 * file, or by a traced process's thread
				 * outside any logging syscall */
	__u64 journal_bytes;	/* its commit's journal blocks, as written */
	__u64 handles_user;	/* by untraced user tasks: never charged to entries */
	__u64 meta_bytes;	/* metadata it wrote in place (btrfs tree blocks, xfs
				 * buffers): split by handles like journal_bytes */
	__u32 fs;		/* enum amp_txn_fs */
	__u32 disk;		/* disk its bytes went to (key of devs), 0 if none yet */
	__u64 handles_file;	/* by kernel threads for a traced file: sum of files[] */
	struct amp_txn_file files[AMP_TXN_FILES];
	/* btrfs: meta_bytes by tree (enum amp_btrfs_tree; 16 for the
	 * kernel's index mask), summing to meta_bytes; 0 elsewhere.  The
	 * ledger splits it as it splits meta_bytes. */
	__u64 tree_bytes[16];
};

/* Sent once the commit has ended: its journal bytes are final. */
struct amp_txn_rec {
	__u32 type;		/* AMP_REC_TXN */
	__u32 dev;
	__u32 tid;
	__u32 committed;	/* 0: drained at exit, commit still running */
	struct amp_txn_stats st;
};

/* btrfs metadata an entry wrote for itself (its fsync's log-tree blocks
 * and log-sync superblocks): map btrfs_entry_own, entry id -> this, read
 * and deleted by user space when the entry comes. */
struct amp_btrfs_own {
	__u64 log;
	__u64 super;
};

/* Metadata a transaction wrote in place after its record went (ext4's
 * checkpoint blocks, filed by its commit, written back later). */
struct amp_txn_late {
	__u32 type;		/* AMP_REC_TXN_LATE */
	__u32 dev;		/* struct amp_txn_key */
	__u32 tid;
	__u32 disk;		/* where the bytes went (key of devs) */
	__u64 bytes;
};

/* Key of the page-owner map: one dirtied folio of one file. */
struct amp_page_key {
	__u64 ino;
	__u64 index;
	__u32 dev;
	__u32 __pad;
};

struct amp_page_owner {
	__u64 entry_id;
	__u32 npages;
	__u32 bytes_written;
	__u16 run;		/* slot in the entry's runs[], or 0xffff */
	__u8 kind;
	__u8 copies;		/* of its write-out seen so far (folios.bpf.h) */
	__u32 settle_slot;	/* the entry's struct amp_settle in `unsettled` */
};

/* Per written-to disk: bytes by class over the whole run. */
struct amp_dev_stats {
	char name[AMP_DISK_NAME_LEN];
	__u64 bytes[AMP_NR_CLASSES];
	__u64 charged_bytes;	/* part of data+metadata charged to live entries */
	__u64 meta_owned;	/* metadata bytes of pages an entry dirtied */
	__u64 journal_txn;	/* journal bytes of a known jbd2 commit */
	__u64 late_bytes;	/* traced folios written after their entry was reported */
	__u64 ios;
	__u64 unwalked_bytes;	/* request bytes past the walk limit (in OTHER) */
	__u64 meta_untraced;	/* metadata bytes of pages untraced user tasks dirtied */
	__u64 meta_txn;		/* metadata bytes of a known fs transaction (meta_bytes) */
	/* A layer's row (a partition, a dm device): its bytes are the disks'
	 * requests' too, counted and shared there, never here. */
	__u32 layer;
	__u32 __pad;
	/* btrfs metadata by tree (AMP_BTRFS_TREES used; 16, a power of 2, for
	 * the kernel's index mask): sums to its part of class metadata. */
	__u64 btrfs_tree[16];
};

/* Per dirtied file (dev, ino) of traced entries: dev as stat() reports it
 * (see inode_dev() in compat.bpf.h). */
struct amp_file_key {
	__u64 ino;
	__u32 dev;
	__u32 __pad;
};

#define AMP_FILE_NAME_LEN 48

struct amp_file_stats {
	char name[AMP_FILE_NAME_LEN];	/* dentry basename, for when no process has it open */
	__u32 last_pid;		/* a tgid that dirtied it: for path lookup */
	__u32 excluded;		/* amptrace's own output, set by the loader: never charged */
	__u64 last_entry;	/* to count each entry once */
	__u64 entries;		/* entries that dirtied it or wrote to it */
	__u64 syscall_bytes;	/* bytes of write syscalls aimed at it */
	__u64 folios_dirtied;
	__u64 pages_dirtied;
	__u64 dev_bytes;	/* device bytes of its folios, charged to entries */
};

/*
 * Where a file lies within its filesystem, from the dentry chain when the
 * kernel side first sees the file (once per file, beside its totals): a
 * writer may have closed it by the time user space looks in
 * /proc/PID/fd.  The names go leaf first, each ending in its NUL, as the
 * walk up meets them (putting them in order in BPF would cost a second
 * buffer); user space reverses them and puts the mount point of sb_dev
 * (from /proc/self/mountinfo) in front.
 */
#define AMP_PATH_LEN	256		/* a power of 2 */
#define AMP_PATH_DEPTH	32		/* dentries walked up, at most */
#define AMP_PATH_ROOT	(1u << 0)	/* the walk reached the filesystem's root */
#define AMP_PATH_DELETED (1u << 1)	/* already unlinked when first seen */

struct amp_file_path {
	__u32 sb_dev;		/* the superblock's s_dev: what mountinfo lists */
	__u16 len;		/* bytes of rev[] in use */
	__u8 flags;		/* AMP_PATH_* */
	__u8 depth;		/* names in rev[] */
	char rev[AMP_PATH_LEN];
};

/* Losses and counters, one per CPU; the loader sums them. */
struct amp_stats {
	__u64 entries_opened;	/* not counted here: user space puts in the
				 * entry ids issued (next_entry_id - 1) */
	__u64 ringbuf_drops;	/* finished entries that did not fit */
	__u64 entries_full;	/* unsettled map full: an entry's folios not charged */
	__u64 tasks_full;	/* no memory for a thread's state: not traced */
	__u64 commits_full;	/* jbd2 commit map full: its blocks not by cause */
	__u64 pages_full;	/* page-owner map full: folio uncharged */
	__u64 files_full;
	__u64 devs_full;
	__u64 pages_untracked;	/* dirtied by a traced thread with no entry */
	__u64 pages_cancelled;	/* re-dirtied or dropped before write-out */
	__u64 jbd2_bios_full;	/* fs_bios full: a journal or txn bio by window */
	__u64 txns_full;
	__u64 entry_txns_dropped;	/* handles in a 5th+ transaction of one entry */
	__u64 page_races;	/* a folio's owner slot stayed busy: its bytes or its
				 * new owner lost (see bpf/folios.bpf.h) */
	__u64 pages_overflow;	/* not a loss: folios owned through the overflow
				 * hash, their table window being full */
	__u64 prog_runs_missed;	/* not always a loss, never written here: the
				 * loader adds the kernel's count
				 * (bpf_prog_info.recursion_misses) of runs it
				 * skipped because the same program was already
				 * running on that CPU, e.g. an untraced disk's
				 * completion in an interrupt over a request walk */
};

#endif /* AMPTRACE_H */
