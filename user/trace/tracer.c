// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace trace`, `record`, `top`: the BPF lifecycle and the poll loop.
 * open -> configure -> load -> attach -> poll -> drain.  User space only
 * completes and delivers finished entries and sums maps; the kernel side
 * does all per-event work.  A record from the ring goes:
 *   settle.c (waits for its device bytes) -> ledger/ (shared costs)
 *   -> deliver_entry() -> each sink (out/: report, record, metrics, top).
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"
#include "ledger/ledger.h"
#include "sink/metrics.h"
#include "sink/record.h"
#include "sink/report.h"
#include "sink/sink.h"
#include "sink/top.h"
#include "sys/devstat.h"
#include "sys/memcg.h"
#include "sys/mounts.h"
#include "sys/paths.h"
#include "sys/presets.h"
#include "sys/senders.h"
#include "trace/journal_readers.h"
#include "trace/ksyms.h"
#include "trace/preflight.h"
#include "trace/prefault.h"
#include "trace/settle.h"
#include "trace/startup.h"
#include "trace/summarize.h"
#include "trace/trace.h"
#include "amptrace.skel.h"

#define SWEEP_PERIOD		0.5	/* s: ledger windows */
#define HEAP_TRIM_PERIOD	10.0	/* s: amp_heap_trim */
#define METRICS_PERIOD		1.0	/* s: device counters to metrics, textfile rewritten */
#define CHECKPOINT_PERIOD	2.0	/* s: a summary into the record, for a killed recorder */
#define MAX_SINKS		4	/* report, record, metrics, top */

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	stop_requested = 1;
	signal(sig, SIG_DFL);	/* a second Ctrl-C kills at once */
}

static bool verbose;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG && !verbose)
		return 0;
	if (!verbose)
		return 0;	/* errors are reported as one line by us */
	return vfprintf(stderr, fmt, ap);
}

struct tracer {
	const struct trace_opts *opts;
	struct amptrace *skel;
	struct ring_buffer *rb;
	struct settler *settler;	/* ring -> settled entries -> ledger */
	struct ledger *ledger;		/* -> complete bills -> sinks */
	struct summarizer *summarizer;	/* the run's totals, from a baseline */
	double next_devices_look;	/* now_s() of the next look_at_devices() */
	struct startup *startup;	/* amptrace's own start-up cost, where audit is on */
	bool btrfs_off;			/* btrfs programs failed to load: window only */
	/* Where finished entries go: whichever the command and options ask
	 * for, in this order (the report resolves the paths the record keeps;
	 * top, last, gives the terminal back first). */
	struct sink sinks[MAX_SINKS];
	int nr_sinks;
	struct senders *senders;	/* who sent each entry's record */
	struct report *report;	/* trace, record: its clock for the record */
	struct recorder *rec;	/* record: its file is never charged */
	struct top *top;	/* top: its keys */
	FILE *out;
	struct amp_settle *slots;	/* the kernel's `unsettled` array, mapped */
	size_t nr_slots;
	/* Syscall hooks: enter+exit per preset syscall, or the raw pair. */
	struct bpf_link *sys_links[2 * AMP_MAX_PRESET_SYSCALLS];
	int nr_sys_links;
	const char *sys_hook;	/* which, for the start line */
	struct bpf_program *enter_prog;	/* on_syscall_enter or its _cast twin */
	struct reader_probes readers;	/* relays that read the journal */
	double start, next_sweep, next_stale, next_trim;
	struct wall_clock clock;	/* entry times: the report's and the record's */
};

/* A finished entry, its bill complete: to every sink of this run. */
static void deliver_entry(void *ctx, const struct amp_entry *e, const struct entry_costs *c)
{
	struct tracer *t = ctx;
	struct entry_costs named = *c;

	named.sender = t->senders ? senders_of(t->senders, e) : NULL;
	for (int i = 0; i < t->nr_sinks; i++)
		sink_entry(&t->sinks[i], e, &named);
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	__u32 type = len >= sizeof(__u32) ? *(__u32 *)data : 0;

	if (type == AMP_REC_TXN && len == sizeof(struct amp_txn_rec))
		ledger_txn(t->ledger, data);
	else if (type == AMP_REC_TXN_LATE && len == sizeof(struct amp_txn_late))
		ledger_txn_late(t->ledger, data);
	else if (type == AMP_REC_SETTLED && len == sizeof(struct amp_settle))
		settler_settled(t->settler, data, false);
	else if (type == AMP_REC_ENTRY && len >= offsetof(struct amp_entry, runs) &&
		 len <= sizeof(struct amp_entry))
		settler_entry(t->settler, data, len);
	return 0;
}

/*
 * How long an xfs entry may wait for its checkpoint's buffers: at idle xfs
 * writes them back when its log worker pushes the AIL, every
 * fs.xfs.xfssyncd_centisecs (30 s by default); two of those (an item
 * relogged meanwhile is pinned until the next checkpoint) and a few
 * seconds for the I/O.
 */
static double xfs_hold_s(void)
{
	FILE *f = fopen("/proc/sys/fs/xfs/xfssyncd_centisecs", "r");
	long cs = 3000;

	if (f) {
		if (fscanf(f, "%ld", &cs) != 1 || cs <= 0)
			cs = 3000;
		fclose(f);
	}
	if (cs > 6000)
		cs = 6000;	/* a hold past 2 minutes serves nobody live */
	return 2 * cs / 100.0 + 5.0;
}

/* xfs's log by cause (bpf/xfslog.bpf.h): its commits, the metadata
 * buffers they logged when written back, and the files its kernel workers
 * name.  Without a traced xfs, or without the tracepoint,
 * that part stays on the window rule, as before. */
static void xfs_programs(struct amptrace *skel, const struct trace_opts *o)
{
	static const struct { const char *tp; const char *what; } tps[] = {
		{ "xfs_trans_commit_items", "xfs log by window" },
		{ "xfs_unwritten_convert", "xfs extent conversions by window" },
		{ "xfs_setfilesize", "xfs size updates by window" },
		{ "xfs_bmap_pre_update", "xfs allocations at write-back by window" },
		{ "xfs_trans_alloc", "xfs rolled transactions' later parts by window" },
	};
	struct bpf_program *progs[] = {
		skel->progs.on_xfs_commit_items,
		skel->progs.on_xfs_unwritten_convert,
		skel->progs.on_xfs_setfilesize,
		skel->progs.on_xfs_bmap_pre_update,
		skel->progs.on_xfs_trans_alloc,
	};
	struct bpf_program *ail_progs[] = {
		skel->progs.on_xfs_ail_insert,
		skel->progs.on_xfs_ail_move,
		skel->progs.on_xfs_ail_delete,
	};
	bool ail;
	bool xfs = fstype_on_devs("xfs", o->dev ? o->dev_stack.devs : NULL, o->dev_stack.nr_devs);

	/* Its log bios by checkpoint. */
	skel->rodata->xfs_traced = xfs && skel->rodata->xfs_log_end_io;
	/* Its metadata buffers written back in place, by the checkpoint that
	 * last logged them: their bios end in xfs_buf_bio_end_io. */
	if (skel->rodata->xfs_traced) {
		skel->rodata->xfs_buf_end_io = ksym_address("xfs_buf_bio_end_io");
		if (!skel->rodata->xfs_buf_end_io && o->verbose)
			fprintf(stderr, "amptrace: xfs_buf_bio_end_io not in kallsyms: "
				"xfs metadata write-back by window\n");
	}

	for (size_t i = 0; i < ARRAY_SIZE(tps); i++) {
		if (xfs && kernel_has_tracepoint(tps[i].tp))
			continue;
		bpf_program__set_autoload(progs[i], false);
		if (xfs && o->verbose)
			fprintf(stderr, "amptrace: no %s tracepoint: %s\n", tps[i].tp, tps[i].what);
	}
	/* A kernel thread's file tag lasts its transaction's rolls only
	 * where the allocation that ends them is seen. */
	skel->rodata->xfs_chains = bpf_program__autoload(skel->progs.on_xfs_trans_alloc);
	/* Checkpoints whose items the AIL has yet to write back: their
	 * entries wait for those bytes (the ledger's xfs hold). */
	ail = skel->rodata->xfs_buf_end_io && kernel_has_tracepoint("xfs_ail_insert") &&
	      kernel_has_tracepoint("xfs_ail_move") && kernel_has_tracepoint("xfs_ail_delete");
	for (size_t i = 0; i < sizeof(ail_progs) / sizeof(ail_progs[0]); i++)
		bpf_program__set_autoload(ail_progs[i], ail);
}

/*
 * dm and md devices (stack.bpf.h): where the traced stack (every device,
 * without --dev) has one, the completions of dm's clones, dm-crypt's
 * writes and md RAID1's legs, from kallsyms, and their structs' members
 * from BTF.  A layer that cannot be walked is said, once; its row then
 * shows only its counter.
 */
enum stack_layer { LAYER_DM, LAYER_MD_RAID1, LAYER_MD_OTHER };

static bool layer_is(const char *name, enum stack_layer want, char *level, size_t len)
{
	const char *k = blockdev_bio_layer(name);

	if (!k)
		return false;
	if (want == LAYER_DM)
		return !strcmp(k, "dm");
	if (strcmp(k, "md") || blockdev_md_level(name, level, len))
		return false;
	return !strcmp(level, "raid1") == (want == LAYER_MD_RAID1);
}

/* The devices that may be layers: the stack's, or (no --dev) every
 * block device.  How many names, malloc'd (free with free_names), or -1. */
static int stack_names(const struct trace_opts *o, char ***names)
{
	struct dirent **ents = NULL;
	char name[AMP_DISK_NAME_LEN];
	int n = 0, nr_ents;

	if (o->dev) {
		*names = calloc(o->dev_stack.nr_devs + 1, sizeof(char *));
		for (int i = 0; *names && i < o->dev_stack.nr_devs; i++)
			if (!blockdev_name(o->dev_stack.devs[i], name, sizeof(name)))
				(*names)[n++] = strdup(name);
		return *names ? n : -1;
	}
	nr_ents = scandir("/sys/class/block", &ents, NULL, alphasort);
	*names = nr_ents > 0 ? calloc(nr_ents, sizeof(char *)) : NULL;
	for (int i = 0; i < nr_ents; i++) {
		if (*names)
			(*names)[n++] = strdup(ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	return *names ? n : -1;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

/* The first of names (n of them) that is such a layer (an md device's
 * level to level), or NULL. */
static const char *stack_find(char **names, int n, enum stack_layer want, char *level, size_t len)
{
	for (int i = 0; i < n; i++)
		if (names[i] && layer_is(names[i], want, level, len))
			return names[i];
	return NULL;
}

/* The stack's layers to the ledger: a filesystem on a dm or md device
 * shares the write-out windows of the first disk below it, and a RAID1's
 * legs share its transactions' bytes (each leg writes a copy). */
static void ledger_layers(struct tracer *t)
{
	__u32 disks[AMP_LEDGER_MIRROR_LEGS], kdev, disk;
	char **names, level[32];
	int n = stack_names(t->opts, &names), legs;

	for (int i = 0; i < n; i++) {
		if (!names[i] || !blockdev_bio_layer(names[i]))
			continue;
		if ((kdev = blockdev_devno(names[i])) && (disk = blockdev_bottom_disk(names[i])))
			ledger_disk_alias(t->ledger, kdev, disk);
		if (layer_is(names[i], LAYER_MD_RAID1, level, sizeof(level)) &&
		    (legs = blockdev_md_disks(names[i], disks, AMP_LEDGER_MIRROR_LEGS)) > 1 &&
		    ledger_mirror(t->ledger, disks, legs))
			fprintf(stderr, "amptrace: %s: its legs' journal bytes by cause all go to "
				"one of them (no room)\n", names[i]);
	}
	if (n >= 0)
		free_names(names, n);
}

/* A block driver's major from /proc/devices ("Block devices:" part); 0 if
 * none. */
static __u32 block_major(const char *driver)
{
	FILE *f = fopen("/proc/devices", "r");
	char line[128], name[64];
	bool block = false;
	unsigned major;

	while (f && fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "Block devices:", 14))
			block = true;
		else if (block && sscanf(line, "%u %63s", &major, name) == 2 && !strcmp(name, driver)) {
			fclose(f);
			return major;
		}
	}
	if (f)
		fclose(f);
	return 0;
}

/* Where dm is a module (Debian, Fedora) or built in (Ubuntu's dm core). */
static __u64 stack_ksym(const char *name, const char *module)
{
	return ksym_module_address(name, module) ?: ksym_module_address(name, NULL);
}

static void configure_dm(struct amptrace *skel)
{
	const char *why = NULL;
	__u64 clone = stack_ksym("clone_endio", "dm_mod");
	__u64 crypt = stack_ksym("crypt_endio", "dm_crypt");
	int tio_clone = kernel_member_offset("dm_mod", "dm_target_io", "clone");
	int tio_io = kernel_member_offset("dm_mod", "dm_target_io", "io");
	int orig_bio = kernel_member_offset("dm_mod", "dm_io", "orig_bio");
	int base_bio = crypt ? kernel_member_offset("dm_crypt", "dm_crypt_io", "base_bio") : 0;

	if (!clone) {
		why = "no clone_endio of dm_mod in /proc/kallsyms";
	} else if (tio_clone < 0 || tio_io < 0 || orig_bio < 0) {
		why = "no BTF of dm_mod's dm_target_io and dm_io";
	} else {
		skel->rodata->dm_clone_end_io = clone;
		skel->rodata->dm_tio_clone_off = tio_clone;
		skel->rodata->dm_tio_io_off = tio_io;
		skel->rodata->dm_io_orig_bio_off = orig_bio;
		skel->rodata->dm_major = block_major("device-mapper");
		if (crypt && base_bio < 0) {
			why = "no BTF of dm_crypt's dm_crypt_io: its writes' bounce pages go to other";
		} else if (crypt) {
			skel->rodata->dm_crypt_end_io = crypt;
			skel->rodata->dm_crypt_io_base_bio_off = base_bio;
		}
	}
	if (why)
		fprintf(stderr, "amptrace: dm layers not walked (%s): a dm device's row shows only "
			"its counter\n", why);
}

/* md RAID1: a leg's write back to the bio that came to md (r1bio), and
 * from 6.5 md's accounting clone back to the bio it stands for. */
static const char *configure_md_raid1(struct amptrace *skel)
{
	__u64 leg = stack_ksym("raid1_end_write_request", "raid1");
	__u64 acct = stack_ksym("md_end_clone_io", "md_mod");
	int master = kernel_member_offset("raid1", "r1bio", "master_bio");
	int mddev = kernel_member_offset("raid1", "r1bio", "mddev");
	int raid_disks = kernel_member_offset("md_mod", "mddev", "raid_disks");
	int degraded = kernel_member_offset("md_mod", "mddev", "degraded");
	int clone_orig = acct ? kernel_member_offset("md_mod", "md_io_clone", "orig_bio") : 0;
	int clone_bio = acct ? kernel_member_offset("md_mod", "md_io_clone", "bio_clone") : 0;

	if (!leg)
		return "no raid1_end_write_request in /proc/kallsyms";
	if (master < 0 || mddev < 0 || raid_disks < 0 || degraded < 0)
		return "no BTF of raid1's r1bio and md_mod's mddev";
	if (clone_orig < 0 || clone_bio < 0)
		return "no BTF of md_mod's md_io_clone";
	skel->rodata->md_raid1_end_io = leg;
	skel->rodata->r1bio_master_bio_off = master;
	skel->rodata->r1bio_mddev_off = mddev;
	skel->rodata->mddev_raid_disks_off = raid_disks;
	skel->rodata->mddev_degraded_off = degraded;
	skel->rodata->md_clone_end_io = acct;
	skel->rodata->md_io_clone_orig_off = clone_orig;
	skel->rodata->md_io_clone_bio_off = clone_bio;
	skel->rodata->md_super_end_io = stack_ksym("super_written", "md_mod");
	return NULL;
}

/* The stack's dm and md layers: walked, or said not to be. */
static void configure_layers(struct amptrace *skel, char **names, int n)
{
	char level[32];
	const char *name, *why;

	if ((name = stack_find(names, n, LAYER_MD_OTHER, level, sizeof(level))))
		fprintf(stderr, "amptrace: md layers other than RAID1 not walked (%s: %s): its row "
			"shows only its counter\n", name, level);
	if ((name = stack_find(names, n, LAYER_MD_RAID1, level, sizeof(level))) &&
	    (why = configure_md_raid1(skel)))
		fprintf(stderr, "amptrace: md RAID1 not walked (%s): %s's row shows only its "
			"counter, and a leg's copy of a page goes to other\n", why, name);
	if (stack_find(names, n, LAYER_DM, level, sizeof(level)))
		configure_dm(skel);
}

static void configure_stack(const struct trace_opts *o, struct amptrace *skel)
{
	char **names;
	int n = stack_names(o, &names);

	if (n >= 0)
		configure_layers(skel, names, n);
	/* Writes a dm device fails itself (dm-flakey, its error target) reach
	 * no request: their bios' ends say it, where dm is walked. */
	if (!skel->rodata->dm_major)
		bpf_program__set_autoload(skel->progs.on_bio_failed, false);
	if (n >= 0)
		free_names(names, n);
}

/*
 * btrfs metadata by cause (btrfs.bpf.h): only where a traced disk holds a
 * btrfs filesystem (its module is then loaded), each tracepoint asked of
 * BTF.  Without one, that part stays on the window rule.
 */
static int configure_btrfs(struct tracer *t)
{
	static const char *const tps[] = {
		"btrfs_cow_block", "btrfs_space_reservation", "btrfs_transaction_commit",
	};
	struct amptrace *skel = t->skel;
	const struct blockdev_stack *st = &t->opts->dev_stack;
	bool on = !t->btrfs_off && fstype_on_devs("btrfs", t->opts->dev ? st->devs : NULL, st->nr_devs);

	for (size_t i = 0; on && i < ARRAY_SIZE(tps); i++)
		if (!kernel_has_tracepoint(tps[i])) {
			on = false;
			if (t->opts->verbose)
				fprintf(stderr, "amptrace: no %s tracepoint: btrfs metadata "
					"charged by window only\n", tps[i]);
		}
	if (on) {
		skel->rodata->btrfs_super_end_io = ksym_address("btrfs_end_super_write");
		if (!skel->rodata->btrfs_super_end_io && t->opts->verbose)
			fprintf(stderr, "amptrace: btrfs_end_super_write not in kallsyms: "
				"btrfs superblocks charged by window\n");
	}
	skel->rodata->btrfs_cause = on;
	/* btrfs_space_reservation fires ~80 times per 64 KiB write(), and the
	 * dispatch alone costs a btrfs writer more than the rest of amptrace
	 * (scripts/bench/README.md, "btrfs: the space-reservation
	 * tracepoint"): an option to do without its handles. */
	if (!on || t->opts->no_btrfs_reservations)
		bpf_program__set_autoload(skel->progs.on_btrfs_space_reservation, false);
	if (!on) {
		bpf_program__set_autoload(skel->progs.on_btrfs_cow_block, false);
		bpf_program__set_autoload(skel->progs.on_btrfs_transaction_commit, false);
	}
	return 0;
}

static int configure(struct tracer *t)
{
	const struct trace_opts *o = t->opts;
	struct amptrace *skel = t->skel;
	__u32 n;

	skel->data->self_tgid = getpid();
	skel->rodata->page_size = sysconf(_SC_PAGESIZE);
	skel->data->filter_pid = o->nr_pids > 0;
	skel->data->filter_cgroup = o->cgroup != NULL;
	if (o->comm) {
		skel->data->filter_comm = true;
		strncpy((char *)skel->data->target_comm, o->comm, AMP_COMM_LEN - 1);
	}
	if (o->dev) {
		skel->data->filter_dev = true;
		for (int i = 0; i < o->dev_stack.nr_devs; i++)
			skel->data->target_devs[i] = o->dev_stack.devs[i];
		skel->data->nr_target_devs = o->dev_stack.nr_devs;
	}
	/* A power of 2: the kernel takes its slots in turn, by mask. */
	t->nr_slots = 1;
	while (t->nr_slots < o->max_entries)
		t->nr_slots <<= 1;
	bpf_map__set_max_entries(skel->maps.unsettled, t->nr_slots);
	skel->data->settle_slot_mask = t->nr_slots - 1;
	/* Folio owners: a table of at least --max-pages slots (a power of 2,
	 * masked), and an eighth of that in the overflow hash. */
	for (n = 1; n < o->max_pages; n <<= 1)
		;
	bpf_map__set_max_entries(skel->maps.folio_table, n);
	skel->data->folio_table_mask = n - 1;
	bpf_map__set_max_entries(skel->maps.page_owners, o->max_pages / 8 > 16 ? o->max_pages / 8 : 16);
	bpf_map__set_max_entries(skel->maps.files, o->max_files);
	/* Paths of as many, up to 64 Ki (21 MiB): a file past those keeps its
	 * basename where no process has it open. */
	bpf_map__set_max_entries(skel->maps.file_paths, o->max_files < 65536 ? o->max_files : 65536);
	bpf_map__set_max_entries(skel->maps.events, o->ringbuf_kb * 1024);
	skel->data->ringbuf_quarter = o->ringbuf_kb * 1024 / 4;

	/* xfs log writes are recognised by their completion function. */
	skel->rodata->xfs_log_end_io = ksym_address("xlog_bio_end_io");
	if (o->verbose && !skel->rodata->xfs_log_end_io)
		fprintf(stderr, "amptrace: xlog_bio_end_io not in kallsyms: xfs log counted as metadata\n");

	configure_stack(o, skel);

	/* Page-era kernels (before 5.17): per-page dirtying event, no bpf_loop. */
	if (kernel_has_tracepoint("writeback_dirty_folio")) {
		bpf_program__set_autoload(skel->progs.on_dirty_page, false);
	} else {
		bpf_program__set_autoload(skel->progs.on_dirty_folio, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no writeback_dirty_folio: per-page writeback_dirty_page\n");
	}
	/* A folio dropped unwritten (bpf/dropped.bpf.h): the event passed a
	 * page before the page cache held folios. */
	if (tracepoint_arg_is("mm_filemap_delete_from_page_cache", "folio")) {
		bpf_program__set_autoload(skel->progs.on_page_dropped, false);
	} else {
		bpf_program__set_autoload(skel->progs.on_folio_dropped, false);
		if (!tracepoint_arg_is("mm_filemap_delete_from_page_cache", "page")) {
			bpf_program__set_autoload(skel->progs.on_page_dropped, false);
			fprintf(stderr, "amptrace: no mm_filemap_delete_from_page_cache tracepoint: "
				"entries whose folios are deleted unwritten wait for --settle-timeout\n");
		}
	}
	/* The request walk: with typed loads where the kernel can cast a raw
	 * pointer (bpf_rdonly_cast, 6.2+), else with probe reads (also where
	 * AMPTRACE_NO_CAST says so, to test that path on a newer kernel). */
	if (kernel_has_func("bpf_rdonly_cast") && !getenv("AMPTRACE_NO_CAST")) {
		bpf_program__set_autoload(skel->progs.on_rq_complete, false);
	} else {
		bpf_program__set_autoload(skel->progs.on_rq_complete_cast, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: request walks with probe reads\n");
	}

	if (configure_btrfs(t))
		return -1;

	/* ext4's journal is jbd2, often a module: without it, no fs-journal stage. */
	if (!kernel_has_tracepoint("jbd2_handle_start")) {
		bpf_program__set_autoload(skel->progs.on_jbd2_handle_start, false);
		bpf_program__set_autoload(skel->progs.on_jbd2_start_commit, false);
		bpf_program__set_autoload(skel->progs.on_jbd2_end_commit, false);
		bpf_program__set_autoload(skel->progs.on_jbd2_write_superblock, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no jbd2 tracepoints (module not loaded?): "
				"ext4 journal charged by window only\n");
	}
	/* xfs's log by cause: only where a traced disk holds xfs (which
	 * loads the module and its BTF), and each tracepoint where it is. */
	xfs_programs(skel, o);
	/* 6.5+: kernel threads name the file before their ext4 handle. */
	if (!kernel_has_tracepoint("ext4_journal_start_inode")) {
		bpf_program__set_autoload(skel->progs.on_ext4_journal_start_inode, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no ext4_journal_start_inode (before 6.5): "
				"a kernel thread's ext4 handle named by its block mapping only\n");
	}
	if (!kernel_has_tracepoint("ext4_ext_map_blocks_enter"))
		bpf_program__set_autoload(skel->progs.on_ext4_map_blocks, false);
	/* Where a kernel thread's file (kthread_files) is forgotten: needed
	 * only where one of those two notes it. */
	if (!kernel_has_tracepoint("ext4_ext_map_blocks_enter") &&
	    !kernel_has_tracepoint("ext4_journal_start_inode")) {
		bpf_program__set_autoload(skel->progs.on_writeback_single_inode, false);
		bpf_program__set_autoload(skel->progs.on_workqueue_execute_end, false);
	}
	/* A kernel thread's handle for no file (nojournal.bpf.h): 6.5+ names
	 * those ext4_journal_start_sb, before every handle ext4_journal_start. */
	if (!kernel_has_tracepoint("ext4_journal_start_sb"))
		bpf_program__set_autoload(skel->progs.on_ext4_journal_start_sb, false);
	if (!kernel_has_tracepoint("ext4_journal_start"))
		bpf_program__set_autoload(skel->progs.on_ext4_journal_start, false);
	return 0;
}

/* Our own output file: in the files map beforehand, marked excluded (by
 * its st_dev, the kernel side's dev: inode_dev() in compat.bpf.h). */
static int exclude_file(struct tracer *t, int fd)
{
	struct amp_file_stats st_excluded = { .excluded = 1 };
	struct amp_file_key key = {};
	struct stat st;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return 0;
	key.dev = kdev_from_user(st.st_dev);
	key.ino = st.st_ino;
	return bpf_map__update_elem(t->skel->maps.files, &key, sizeof(key),
				    &st_excluded, sizeof(st_excluded), BPF_ANY);
}

static int fill_maps(struct tracer *t, const struct preset_syscall *sys, int nr_sys)
{
	const struct trace_opts *o = t->opts;
	struct amptrace *skel = t->skel;
	__u8 one = 1;
	int err;

	for (int i = 0; i < nr_sys; i++) {
		__u32 key = sys[i].nr;
		__u8 kind = sys[i].kind;

		if (key >= AMP_MAX_SYSCALLS)
			continue;
		if (sys[i].relay)
			skel->data->relay_links = true;
		err = bpf_map__update_elem(skel->maps.syscall_kinds, &key, sizeof(key),
					   &kind, sizeof(kind), BPF_ANY);
		if (err)
			return err;
	}
	for (int i = 0; i < o->nr_pids; i++) {
		__u32 pid = o->pids[i];

		err = bpf_map__update_elem(skel->maps.target_pids, &pid, sizeof(pid),
					   &one, sizeof(one), BPF_ANY);
		if (err)
			return err;
	}
	if (o->cgroup) {
		int fd = open(o->cgroup, O_RDONLY | O_DIRECTORY);
		__u32 zero = 0;

		if (fd < 0) {
			amp_err("cannot open cgroup %s: %s", o->cgroup, strerror(errno));
			return -1;
		}
		err = bpf_map__update_elem(skel->maps.target_cgroup, &zero, sizeof(zero),
					   &fd, sizeof(fd), BPF_ANY);
		close(fd);
		if (err) {
			amp_err("%s is not a cgroup v2 directory", o->cgroup);
			return -1;
		}
	}
	/* Our own output is never charged to the traced entries. */
	err = exclude_file(t, fileno(t->out));
	if (!err && t->rec)
		err = exclude_file(t, recorder_fd(t->rec));
	return err;
}

/* What the maps and the ledger know besides the devices: ledger shares per
 * disk, losses, per-file totals (optional: a walk of the files map), and
 * the settlement's. */
static void complete_summary(struct tracer *t, struct summary *s, bool files)
{
	summarize_rest(t->summarizer, s, t->ledger, files);
	s->entries_timed_out = settler_timed_out(t->settler);
	s->late_records = settler_late(t->settler);
	s->ringbuf_kb = t->opts->ringbuf_kb;
	s->clock = &t->clock;
}

/* Reporting and recording need the run's options; metrics listen early,
 * so a busy port fails before the BPF programs are loaded. */
static int open_sinks(struct tracer *t)
{
	const struct trace_opts *o = t->opts;
	struct metrics *m;

	if (o->mode != AMP_MODE_TOP) {
		if (o->output) {
			t->out = fopen(o->output, "w");
			if (!t->out) {
				amp_err("cannot write %s: %s", o->output, strerror(errno));
				return -1;
			}
		}
		setvbuf(t->out, NULL, _IOLBF, 0);
		t->report = report_new(t->out, o->json, o->quiet, &t->clock);
		if (!t->report)
			return -1;
		t->sinks[t->nr_sinks++] = report_sink(t->report);
	}
	if (o->mode == AMP_MODE_RECORD) {
		/* The report's clock, so that both print the same times. */
		t->rec = recorder_new(o->record_path, o->argc, o->argv, &t->clock);
		if (!t->rec)
			return -1;
		t->sinks[t->nr_sinks++] = recorder_sink(t->rec, CHECKPOINT_PERIOD);
	}
	if (o->metrics_addr || o->metrics_file) {
		m = metrics_new(o->metrics_addr, o->metrics_file, o->metrics_senders);
		if (!m)
			return -1;
		t->sinks[t->nr_sinks++] = metrics_sink(m, METRICS_PERIOD);
	}
	return 0;
}

/* ok: the run succeeded, so the recorder may say what it wrote.  Last
 * opened, first closed: top gives the terminal back before anything. */
static int close_sinks(struct tracer *t, bool ok)
{
	int err = 0;

	while (t->nr_sinks > 0)
		if (sink_close(&t->sinks[--t->nr_sinks], ok))
			err = -1;
	if (t->out && t->out != stdout)
		fclose(t->out);
	return err;
}

/* How often to look for stale entries: a tenth of --settle-timeout, so one
 * is reported at most 10% late, without reading the whole unsettled map
 * twice a second. */
static double stale_period(const struct tracer *t)
{
	double p = t->opts->settle_timeout / 10.0;

	return p < SWEEP_PERIOD ? SWEEP_PERIOD : p > 5.0 ? 5.0 : p;
}

static bool sink_due(const struct sink *k, double now)
{
	return k->period > 0 && now >= k->next;
}

/*
 * Work that is not per record: report stale entries and close quiet
 * ledger windows; then give the sinks that are due (top's screen, the
 * metrics, the record's checkpoint) one shared snapshot of the devices.
 * True when a sink is done (top has shown its count).
 */
static bool periodic(struct tracer *t)
{
	double now = now_s();
	bool due = false, done = false;
	struct summary s = {};

	if (now >= t->next_stale) {
		settler_sweep(t->settler, false);
		t->next_stale = now + stale_period(t);
	}
	if (now >= t->next_sweep) {
		/* What the ring holds first: the ledger reads the kernel's AIL
		 * counts, which run ahead of the records (ledger_xfs_ail). */
		ring_buffer__consume(t->rb);
		ledger_tick(t->ledger, false);
		t->next_sweep = now + SWEEP_PERIOD;
	}
	if (now >= t->next_trim) {
		amp_heap_trim();
		t->next_trim = now + HEAP_TRIM_PERIOD;
	}
	for (int i = 0; i < t->nr_sinks; i++)
		due |= sink_due(&t->sinks[i], now);
	if (!due)
		return false;

	s.duration_s = now - t->start;
	summarize_devs(t->summarizer, &s);
	complete_summary(t, &s, false);
	for (int i = 0; i < t->nr_sinks; i++) {
		struct sink *k = &t->sinks[i];

		if (!sink_due(k, now))
			continue;
		done |= sink_summary(k, &s, false) == 1;
		/* On the period's grid, unless we fell a whole period behind. */
		k->next += k->period;
		if (k->next <= now)
			k->next = now + k->period;
	}
	free(s.devs);
	return done;
}

static void detach_syscall_hooks(struct tracer *t)
{
	while (t->nr_sys_links > 0)
		bpf_link__destroy(t->sys_links[--t->nr_sys_links]);
	reader_probes_detach(&t->readers);
}

/* Does the preset name its writes' senders from its receives (write)? */
static bool preset_relays(const struct preset_syscall *sys, int nr_sys)
{
	for (int i = 0; i < nr_sys; i++)
		if (sys[i].relay)
			return true;
	return false;
}

static bool add_sys_link(struct tracer *t, struct bpf_link *link)
{
	if (!link)
		return false;
	t->sys_links[t->nr_sys_links++] = link;
	return true;
}

/*
 * The preset's syscalls through their own tracepoints (syscalls:sys_enter_
 * write, ...): then no other syscall of the system runs a program, which is
 * most of what tracing costs a busy logger.  Where the kernel has no
 * syscall events (CONFIG_FTRACE_SYSCALLS) or tracefs is not mounted, or
 * with --raw-syscalls, the raw sys_enter/sys_exit, which see every syscall.
 */
static int attach_syscall_hooks(struct tracer *t, const struct preset_syscall *sys, int n)
{
	struct amptrace *skel = t->skel;
	char event[64];
	int i;

	for (i = 0; !t->opts->raw_syscalls && i < n && i < AMP_MAX_PRESET_SYSCALLS; i++) {
		snprintf(event, sizeof(event), "sys_exit_%s", sys[i].name);
		if (!add_sys_link(t, bpf_program__attach_tracepoint(skel->progs.on_syscall_exit,
								    "syscalls", event)))
			break;
		if (sys[i].kind == AMP_SYS_SOCKRECV || sys[i].kind == AMP_SYS_RECVMSG)
			continue;	/* its exit does everything */
		snprintf(event, sizeof(event), "sys_enter_%s", sys[i].name);
		if (!add_sys_link(t, bpf_program__attach_tracepoint(t->enter_prog,
								    "syscalls", event)))
			break;
	}
	if (i == n && !t->opts->raw_syscalls) {
		t->sys_hook = "syscall tracepoints";
		return 0;
	}
	detach_syscall_hooks(t);
	if (!add_sys_link(t, bpf_program__attach(skel->progs.on_sys_exit)) ||
	    !add_sys_link(t, bpf_program__attach(skel->progs.on_sys_enter))) {
		amp_err("cannot attach to the syscall tracepoints (%s); rerun with -v",
			strerror(errno));
		detach_syscall_hooks(t);
		return -1;
	}
	t->sys_hook = "raw syscall tracepoint";
	return 0;
}

/* Entries still open in their threads' state: reported through the ring
 * as they stand.  Runs after detaching, so no thread moves meanwhile. */
static void drain_open_entries(struct tracer *t)
{
	struct bpf_link *link = bpf_program__attach_iter(t->skel->progs.drain_threads, NULL);
	char buf[64];
	int fd;

	if (!link) {
		amp_err("cannot collect the open entries: %s", strerror(errno));
		return;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		amp_err("cannot collect the open entries: %s", strerror(errno));
	} else {
		while (read(fd, buf, sizeof(buf)) > 0)
			;
		close(fd);
	}
	bpf_link__destroy(link);
}

/* Under -v: what one prefault did (n >= 0) or why it failed (-errno). */
static void prefault_said(const struct tracer *t, const char *what, int n, const char *unit,
			  double t0)
{
	if (!t->opts->verbose)
		return;
	if (n < 0)
		fprintf(stderr, "amptrace: %s not prefaulted: %s\n", what, strerror(-n));
	else
		fprintf(stderr, "amptrace: %s prefaulted (%d %s, %.1f ms)\n", what, n, unit,
			(now_s() - t0) * 1e3);
}

/* The events ring and the large arrays the per-folio and per-entry
 * programs write, touched once before they attach (see
 * trace/prefault.c).  Only speed is at stake: a failure is said under -v
 * and tracing goes on. */
static void prefault_maps(struct tracer *t)
{
	const struct bpf_map *maps[] = {
		t->skel->maps.folio_table, t->skel->maps.unsettled, t->skel->maps.bss,
	};
	double t0 = now_s();
	int n = prefault_ring(bpf_program__fd(t->skel->progs.prefault_events), t->rb,
			      bpf_map__max_entries(t->skel->maps.events));

	prefault_said(t, "events ring", n, "records", t0);
	for (size_t i = 0; i < ARRAY_SIZE(maps); i++) {
		t0 = now_s();
		n = prefault_array_map(bpf_map__fd(maps[i]));
		prefault_said(t, bpf_map__name(maps[i]), n, "lookups", t0);
	}
}

/* Under -v, before the flush: how big the ledger's tables grew. */
static void say_ledger(const struct tracer *t)
{
	struct ledger_stats ls;

	if (!t->opts->verbose)
		return;
	ledger_stats(t->ledger, &ls);
	fprintf(stderr, "amptrace: ledger: %zu transactions kept, %llu retired; %zu entries held (at most %zu)\n",
		ls.txns_kept, (unsigned long long)ls.txns_retired, ls.held, ls.held_peak);
}

/* What the kernel charges to amptrace's memory cgroup while it loads: its
 * maps as sized (per type, roughly as the kernel allocates them), and the
 * verifier's work on the programs with the loader's own memory, measured
 * at 54 MiB on 6.18 (peak 97 MiB with 43 MiB of maps). */
#define AMP_LOAD_WORK_MIB 56

static __u64 maps_estimate(const struct bpf_object *obj)
{
	const struct bpf_map *m;
	int cpus = libbpf_num_possible_cpus();
	__u64 all = 0;

	bpf_object__for_each_map(m, obj) {
		__u64 n = bpf_map__max_entries(m), k = (bpf_map__key_size(m) + 7) & ~7ULL;
		__u64 v = (bpf_map__value_size(m) + 7) & ~7ULL;

		switch (bpf_map__type(m)) {
		case BPF_MAP_TYPE_ARRAY:
			all += n * v;
			break;
		case BPF_MAP_TYPE_PERCPU_ARRAY:
			all += n * v * (cpus > 0 ? cpus : 1);
			break;
		case BPF_MAP_TYPE_HASH:
		case BPF_MAP_TYPE_LRU_HASH:
			all += n * (k + v + 56);	/* each element's header */
			break;
		case BPF_MAP_TYPE_RINGBUF:
			all += n;
			break;
		default:			/* task storage: grows with use */
			break;
		}
	}
	return all;
}

/* Under a memory cgroup limit too low to load, the kernel would kill
 * amptrace while it verifies its programs (or fail a map with ENOMEM):
 * say so in one line instead.  0: room enough, or no limit. */
static int memory_enough(const struct bpf_object *obj)
{
	char cgroup[4096] = "";
	__u64 limit, used, need = maps_estimate(obj) + ((__u64)AMP_LOAD_WORK_MIB << 20);

	if (memcg_room(&limit, &used, cgroup, sizeof(cgroup)) || (limit > used && limit - used >= need))
		return 0;
	amp_err("the memory cgroup %s allows %llu MiB with %llu in use, and loading needs about "
		"%llu more (maps %llu, the kernel's check of the programs %d): raise its limit, or "
		"shrink the maps (--max-pages, --max-entries)", cgroup,
		(unsigned long long)(limit >> 20), (unsigned long long)(used >> 20),
		(unsigned long long)(need >> 20), (unsigned long long)((need >> 20) - AMP_LOAD_WORK_MIB),
		AMP_LOAD_WORK_MIB);
	return -1;
}

/* Are there per-syscall tracepoints (tracefs) for every preset syscall? */
static bool syscall_events_exist(const struct preset_syscall *sys, int n)
{
	static const char *const roots[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[128];

	for (size_t r = 0; r < sizeof(roots) / sizeof(roots[0]); r++) {
		int i;

		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/events/syscalls/sys_exit_%s", roots[r],
				 sys[i].name);
			if (access(path, F_OK))
				break;
		}
		if (i == n)
			return true;
	}
	return false;
}

static int load_and_attach(struct tracer *t, const struct preset_syscall *sys, int nr_sys)
{
	LIBBPF_OPTS(bpf_object_open_opts, open_opts, .btf_custom_path = t->opts->btf_path);
	int err;

	t->skel = amptrace__open_opts(&open_opts);
	if (!t->skel) {
		amp_err("cannot open the BPF object: %s", strerror(errno));
		return -1;
	}
	if (configure(t))
		return -1;
	/* Run once at the end (drain_open_entries), not attached. */
	bpf_program__set_autoattach(t->skel->progs.drain_threads, false);
	/* Run before attaching (prefault_maps), not attached. */
	bpf_program__set_autoattach(t->skel->progs.prefault_events, false);
	/* Attached by attach_syscall_hooks, one way or the other; the raw pair
	 * is loaded only where it may be needed (each load is an audit record
	 * where audit is on). */
	if (syscall_events_exist(sys, nr_sys) && !t->opts->raw_syscalls) {
		bpf_program__set_autoload(t->skel->progs.on_sys_enter, false);
		bpf_program__set_autoload(t->skel->progs.on_sys_exit, false);
	}
	bpf_program__set_autoattach(t->skel->progs.on_sys_enter, false);
	bpf_program__set_autoattach(t->skel->progs.on_sys_exit, false);
	/* The per-syscall enter: with typed loads where the kernel can cast a
	 * raw pointer (bpf_rdonly_cast, 6.2+), else with probe reads. */
	if (kernel_has_func("bpf_rdonly_cast")) {
		t->enter_prog = t->skel->progs.on_syscall_enter_cast;
		bpf_program__set_autoload(t->skel->progs.on_syscall_enter, false);
	} else {
		t->enter_prog = t->skel->progs.on_syscall_enter;
		bpf_program__set_autoload(t->skel->progs.on_syscall_enter_cast, false);
	}
	bpf_program__set_autoattach(t->skel->progs.on_syscall_enter, false);
	bpf_program__set_autoattach(t->skel->progs.on_syscall_enter_cast, false);
	bpf_program__set_autoattach(t->skel->progs.on_syscall_exit, false);
	/* Journal readers' probes: attached by reader_probes_attach, loaded
	 * where relays are traced. */
	for (int i = 0; i < 3; i++) {
		struct bpf_program *p = i == 0 ? t->skel->progs.on_journal_next :
					i == 1 ? t->skel->progs.on_journal_enumerate :
						 t->skel->progs.on_journal_timestamp;

		bpf_program__set_autoattach(p, false);
		if (!preset_relays(sys, nr_sys))
			bpf_program__set_autoload(p, false);
	}
	if (memory_enough(t->skel->obj))
		return -1;
	err = amptrace__load(t->skel);
	if (err && t->skel->rodata->btrfs_cause && !t->btrfs_off) {
		/* A kernel whose btrfs the programs do not fit (their types and
		 * tracepoints differ by release): trace all the same, btrfs
		 * metadata by window, as before they existed. */
		fprintf(stderr, "amptrace: btrfs programs do not load on this kernel (%s): btrfs "
			"metadata charged by window (-v: the verifier log)\n", strerror(-err));
		amptrace__destroy(t->skel);
		t->skel = NULL;
		t->btrfs_off = true;
		return load_and_attach(t, sys, nr_sys);
	}
	if (err) {
		amp_err("cannot load BPF programs (%s); rerun with -v for the verifier log",
			strerror(-err));
		return -1;
	}
	err = fill_maps(t, sys, nr_sys);
	if (err) {
		if (err != -1)
			amp_err("cannot fill BPF maps: %s", strerror(-err));
		return -1;
	}
	t->slots = mmap(NULL, t->nr_slots * sizeof(*t->slots), PROT_READ | PROT_WRITE,
			MAP_SHARED, bpf_map__fd(t->skel->maps.unsettled), 0);
	if (t->slots == MAP_FAILED) {
		t->slots = NULL;
		amp_err("cannot map the unsettled-entries array: %s", strerror(errno));
		return -1;
	}
	/* Before attaching: the prefault of the ring consumes from it. */
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), on_record, t, NULL);
	if (!t->rb) {
		amp_err("cannot create the ring buffer reader: %s", strerror(errno));
		return -1;
	}
	prefault_maps(t);
	/* Entries opened until startup_finish() are amptrace's own cost. */
	t->skel->data->startup_own = t->startup != NULL;
	err = amptrace__attach(t->skel);
	if (err) {
		amp_err("cannot attach to tracepoints (%s); rerun with -v", strerror(-err));
		return -1;
	}
	if (attach_syscall_hooks(t, sys, nr_sys))
		return -1;
	if (preset_relays(sys, nr_sys)) {
		struct reader_progs rp = {
			.next_ret = t->skel->progs.on_journal_next,
			.enumerate = t->skel->progs.on_journal_enumerate,
			.timestamp = t->skel->progs.on_journal_timestamp,
		};

		reader_probes_attach(&t->readers, &rp, t->opts);
	}
	t->ledger = ledger_new(deliver_entry, t, bpf_map__fd(t->skel->maps.devs));
	if (!t->ledger)
		return -1;
	if (t->skel->rodata->btrfs_cause)
		ledger_btrfs_own(t->ledger, bpf_map__fd(t->skel->maps.btrfs_entry_own));
	if (bpf_program__autoload(t->skel->progs.on_xfs_ail_insert))
		ledger_xfs_ail(t->ledger, bpf_map__fd(t->skel->maps.xfs_ail_seqs), xfs_hold_s());
	t->settler = settler_new(t->ledger, t->slots, t->nr_slots, t->opts->settle_timeout);
	if (!t->settler)
		return -1;
	ledger_unsettled(t->ledger, settler_held(t->settler));
	ledger_settle_timeout(t->ledger, t->opts->settle_timeout);
	ledger_layers(t);
	return 0;
}

/* What the traced processes wrote because amptrace started (its program
 * loads as audit records) becomes an entry of amptrace's own. */
static void own_startup(struct tracer *t)
{
	struct startup_target tg = {
		.pages_fd = bpf_map__fd(t->skel->maps.startup_pages),
		.slots = t->slots,
		.nr_slots = t->nr_slots,
		.next_entry_id = &t->skel->data->next_entry_id,
		.startup_own = &t->skel->data->startup_own,
		.held = settler_held(t->settler),
	};
	struct amp_settle now;

	if (startup_finish(t->startup, &tg, &now) == 1)
		settler_settled(t->settler, &now, false);
}

/* A step of the wall clock: entries from here on print on the new one
 * (the record keeps the step); said once per step. */
static void look_at_clock(struct tracer *t)
{
	struct clock_step step;

	if (wall_clock_check(&t->clock, &step))
		fprintf(stderr, "amptrace: the wall clock stepped by %+.3f s; entry times "
			"follow it\n", step.by_ns / 1e9);
}

/* A traced device removed (dmsetup remove, a disk unplugged): said once;
 * the trace goes on with the others, the row keeps its counter as last
 * read, about a second before. */
static void look_at_devices(struct tracer *t)
{
	const char *gone;
	double now = now_s();

	if (now < t->next_devices_look)
		return;
	t->next_devices_look = now + 1;
	while ((gone = summarizer_watch(t->summarizer)))
		fprintf(stderr, "amptrace: %s went away while traced; its row keeps its "
			"counter as last read\n", gone);
}

/* Until a signal, -d, top's count or its q key. */
static int poll_loop(struct tracer *t)
{
	const struct trace_opts *o = t->opts;
	int err;

	t->start = now_s();
	t->next_sweep = t->start + SWEEP_PERIOD;
	t->next_stale = t->start + stale_period(t);
	for (int i = 0; i < t->nr_sinks; i++)
		t->sinks[i].next = t->start + (t->sinks[i].at_start ? 0 : t->sinks[i].period);
	while (!stop_requested) {
		look_at_clock(t);	/* before the entries it may concern */
		look_at_devices(t);
		reader_probes_look(&t->readers);	/* a -c journal reader restarted */
		err = ring_buffer__poll(t->rb, 100);
		if (err < 0 && err != -EINTR) {
			amp_err("ring buffer poll failed: %s", strerror(-err));
			return -1;
		}
		/* Records the kernel sent without a wake-up (it batches them):
		 * poll only reads a ring it was woken for. */
		ring_buffer__consume(t->rb);
		if (o->duration && now_s() - t->start >= o->duration)
			break;
		if (periodic(t) || (t->top && top_keys(t->top)))
			break;
	}
	return 0;
}

int trace_run(const struct trace_opts *o)
{
	const struct preset_syscall *sys;
	struct tracer t = { .opts = o, .out = stdout };
	struct preset_target target = {
		.comm = o->comm, .cgroup = o->cgroup, .pids = o->pids, .nr_pids = o->nr_pids,
	};
	struct bpf_link *exit_link = NULL;
	struct summary s = {};
	int nr_sys, err = -1;

	verbose = o->verbose;
	libbpf_set_print(libbpf_log);
	if (preflight_check(o->btf_path))
		return -1;
	if (preset_resolve(o->preset, &target, &sys, &nr_sys))
		return -1;
	wall_clock_start(&t.clock);
	if (open_sinks(&t))
		goto cleanup;
	/* Before any program is loaded: what the traced processes had dirty. */
	t.startup = startup_begin(o);
	err = load_and_attach(&t, sys, nr_sys);
	kernel_btf_release();	/* no more tracepoints to look up */
	if (err)
		goto cleanup;
	err = -1;
	t.summarizer = summarizer_new(bpf_map__fd(t.skel->maps.devs),
				      bpf_map__fd(t.skel->maps.files),
				      bpf_map__fd(t.skel->maps.stats),
				      &t.skel->data->next_entry_id, o->dev ? &o->dev_stack : NULL);
	if (!t.summarizer)
		goto cleanup;
	summarizer_use_progs(t.summarizer, t.skel->obj);
	paths_use_maps(bpf_map__fd(t.skel->maps.files), bpf_map__fd(t.skel->maps.file_paths));
	paths_use_bdevfs(&t.skel->data->bdevfs_dev);
	t.senders = senders_new(bpf_map__fd(t.skel->maps.exited_procs));
	if (!t.senders)
		goto cleanup;
	for (int i = 0; i < nr_sys; i++)
		if (sys[i].kind != AMP_SYS_WRITE)
			t.skel->data->track_senders = true;
	own_startup(&t);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);	/* a closed terminal stops us cleanly too */
	fprintf(stderr, "amptrace: tracing (%s preset, %d syscalls, %s); Ctrl-C to stop\n",
		o->preset, nr_sys, t.sys_hook);
	if (o->mode == AMP_MODE_TOP) {
		t.top = top_new(o->interval, o->count, o->sort_key, o->top_by);
		if (!t.top)
			goto cleanup;
		t.sinks[t.nr_sinks++] = top_sink(t.top);
	}
	err = poll_loop(&t);

	/* Detach and read both counters at once, then settle what is left.
	 * The thread-exit program stays until the drain has run: a thread
	 * that exits meanwhile still adds its file totals (the drain adds
	 * those of the threads it finds). */
	s.duration_s = now_s() - t.start;
	detach_syscall_hooks(&t);
	exit_link = t.skel->links.on_thread_exit;
	t.skel->links.on_thread_exit = NULL;
	amptrace__detach(t.skel);
	summarize_devs(t.summarizer, &s);
	summary_failed_counted(&s);
	ring_buffer__consume(t.rb);
	drain_open_entries(&t);
	bpf_link__destroy(exit_link);
	exit_link = NULL;
	ring_buffer__consume(t.rb);	/* what the drain reported */
	settler_sweep(t.settler, true);
	settler_drain(t.settler);
	say_ledger(&t);
	ledger_flush(t.ledger, bpf_map__fd(t.skel->maps.txns));
	complete_summary(&t, &s, true);
	/* The report first: it resolves the files' paths the record then keeps. */
	for (int i = 0; i < t.nr_sinks; i++)
		if (sink_summary(&t.sinks[i], &s, true) < 0)
			err = -1;

cleanup:
	bpf_link__destroy(exit_link);
	ring_buffer__free(t.rb);
	if (t.slots)
		munmap(t.slots, t.nr_slots * sizeof(*t.slots));
	detach_syscall_hooks(&t);
	amptrace__destroy(t.skel);
	settler_free(t.settler);
	ledger_free(t.ledger);
	summarizer_free(t.summarizer);
	startup_free(t.startup);
	senders_free(t.senders);
	if (close_sinks(&t, !err))
		err = -1;
	free(s.devs);
	free(s.files);
	return err;
}
