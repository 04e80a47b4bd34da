// SPDX-License-Identifier: GPL-2.0
/*
 * `amptrace trace`: open -> configure -> load -> attach -> poll -> drain.
 * Userspace only renders finished entries and sums maps at the end; the
 * kernel side does all per-event work.
 */
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <fcntl.h>
#include <search.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "loader.h"
#include "record.h"
#include "amptrace.skel.h"

#define SWEEP_PERIOD		0.5	/* s: ledger windows */
#define METRICS_PERIOD		1.0	/* s: device counters to metrics, textfile rewritten */
#define CHECKPOINT_PERIOD	2.0	/* s: a summary into the record, for a killed recorder */

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
	struct ledger *ledger;
	/* Consumers of finished entries: whichever the command and options ask for. */
	struct report *report;	/* trace, record (summary) */
	struct recorder *rec;	/* record */
	struct top *top;	/* top */
	struct metrics *metrics;	/* --metrics, --metrics-file */
	FILE *out;
	struct unsettled *unsettled;	/* entries awaiting their AMP_REC_SETTLED */
	struct startup *startup;	/* amptrace's own start-up cost, where audit is on */
	struct amp_settle *slots;	/* the kernel's `unsettled` array, mapped */
	size_t nr_slots;
	void *timed_out;	/* tsearch set of ids reported by the sweep */
	__u64 entries_timed_out, late_records;
	/* device counters at start, for every disk in /sys/block */
	struct baseline {
		char name[AMP_DISK_NAME_LEN];
		__u32 kdev;
		struct disk_counter c;
		struct amp_dev_stats st;
	} *base;
	int nr_base;
	/* Syscall hooks: enter+exit per preset syscall, or the raw pair. */
	struct bpf_link *sys_links[2 * AMP_MAX_PRESET_SYSCALLS];
	int nr_sys_links;
	const char *sys_hook;	/* which, for the start line */
	double start, next_sweep, next_stale, next_screen, next_metrics, next_checkpoint;
};

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

/* A finished entry, to every consumer of this run. */
static void deliver_entry(void *ctx, const struct amp_entry *e, const struct entry_costs *c)
{
	struct tracer *t = ctx;

	if (t->report)
		report_entry(t->report, e, c);
	if (t->rec)
		recorder_entry(t->rec, e, c);
	if (t->top)
		top_entry(t->top, e, c);
	if (t->metrics)
		metrics_entry(t->metrics, e, c);
}

/* An entry's device-side totals came (or, drained, were taken from the
 * map): the entry is complete, on to the ledger. */
static void settled(struct tracer *t, const struct amp_settle *s, bool drained)
{
	static struct amp_entry e;

	if (!unsettled_settle(t->unsettled, s, &e)) {
		/* Already reported by the settle-timeout sweep: count, don't
		 * repeat.  (Otherwise its entry record was lost: ringbuf_drops.) */
		if (t->timed_out && tfind(&s->id, &t->timed_out, cmp_u64))
			t->late_records++;
		return;
	}
	if (drained)
		e.flags |= AMP_ENTRY_DRAINED;
	ledger_entry(t->ledger, &e);
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct tracer *t = ctx;
	const struct amp_entry *e = data;
	__u32 type = len >= sizeof(__u32) ? *(__u32 *)data : 0;

	if (type == AMP_REC_TXN && len == sizeof(struct amp_txn_rec)) {
		ledger_txn(t->ledger, data);
		return 0;
	}
	if (type == AMP_REC_SETTLED && len == sizeof(struct amp_settle)) {
		settled(t, data, false);
		return 0;
	}
	if (type != AMP_REC_ENTRY || len < offsetof(struct amp_entry, runs) || len > sizeof(*e))
		return 0;
	if (e->flags & AMP_ENTRY_UNSETTLED) {
		if (unsettled_hold(t->unsettled, e, len) == 0)
			return 0;
		/* No memory to wait: report it as it stands. */
	}
	/* The kernel sends only the scatter slots in use: widen to a whole entry. */
	if (len < sizeof(*e)) {
		static struct amp_entry full;

		memset(&full, 0, sizeof(full));
		memcpy(&full, data, len);
		full.flags &= ~AMP_ENTRY_UNSETTLED;
		e = &full;
	}
	ledger_entry(t->ledger, e);
	return 0;
}

/* A kernel text symbol's address, 0 if absent or hidden (kptr_restrict). */
static __u64 kallsyms_lookup(const char *name)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char sym[256], type;
	unsigned long long addr;
	__u64 found = 0;

	if (!f)
		return 0;
	while (fscanf(f, "%llx %c %255s%*[^\n]", &addr, &type, sym) == 3)
		if (!strcmp(sym, name)) {
			found = addr;
			break;
		}
	fclose(f);
	return found;
}

static int configure(struct tracer *t)
{
	const struct trace_opts *o = t->opts;
	struct amptrace *skel = t->skel;
	unsigned major, minor;

	skel->rodata->self_tgid = getpid();
	skel->rodata->page_size = sysconf(_SC_PAGESIZE);
	skel->rodata->filter_pid = o->nr_pids > 0;
	skel->rodata->filter_cgroup = o->cgroup != NULL;
	if (o->comm) {
		skel->rodata->filter_comm = true;
		strncpy((char *)skel->rodata->target_comm, o->comm, AMP_COMM_LEN - 1);
	}
	if (o->dev) {
		if (disk_lookup(o->dev, &major, &minor)) {
			amp_err("cannot read /sys/block/%s/dev", o->dev);
			return -1;
		}
		skel->rodata->filter_dev = true;
		skel->rodata->target_disk_major = major;
		skel->rodata->target_disk_minor = minor;
	}
	/* A power of 2: the kernel takes its slots in turn, by mask. */
	t->nr_slots = 1;
	while (t->nr_slots < o->max_entries)
		t->nr_slots <<= 1;
	bpf_map__set_max_entries(skel->maps.unsettled, t->nr_slots);
	skel->rodata->settle_slot_mask = t->nr_slots - 1;
	bpf_map__set_max_entries(skel->maps.page_owners, o->max_pages);
	bpf_map__set_max_entries(skel->maps.files, o->max_files);
	/* Paths of as many, up to 64 Ki (21 MiB): a file past those keeps its
	 * basename where no process has it open. */
	bpf_map__set_max_entries(skel->maps.file_paths, o->max_files < 65536 ? o->max_files : 65536);
	bpf_map__set_max_entries(skel->maps.events, o->ringbuf_kb * 1024);
	skel->rodata->ringbuf_quarter = o->ringbuf_kb * 1024 / 4;

	/* xfs log writes are recognised by their completion function. */
	skel->rodata->xfs_log_end_io = kallsyms_lookup("xlog_bio_end_io");
	if (o->verbose && !skel->rodata->xfs_log_end_io)
		fprintf(stderr, "amptrace: xlog_bio_end_io not in kallsyms: xfs log counted as metadata\n");

	/* Page-era kernels (before 5.17): per-page dirtying event, no bpf_loop. */
	if (kernel_has_tracepoint("writeback_dirty_folio")) {
		bpf_program__set_autoload(skel->progs.on_dirty_page, false);
	} else {
		bpf_program__set_autoload(skel->progs.on_dirty_folio, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no writeback_dirty_folio: per-page writeback_dirty_page\n");
	}
	if (kernel_has_enum_value("bpf_func_id", "BPF_FUNC_loop") && !getenv("AMPTRACE_NO_BPF_LOOP")) {
		bpf_program__set_autoload(skel->progs.on_rq_complete_bounded, false);
	} else {
		bpf_program__set_autoload(skel->progs.on_rq_complete, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no bpf_loop: request walks in a bounded loop\n");
	}

	/* ext4's journal is jbd2, often a module: without it, no fs-journal stage. */
	if (!kernel_has_tracepoint("jbd2_handle_start")) {
		bpf_program__set_autoload(skel->progs.on_jbd2_handle_start, false);
		bpf_program__set_autoload(skel->progs.on_jbd2_start_commit, false);
		bpf_program__set_autoload(skel->progs.on_jbd2_end_commit, false);
		if (o->verbose)
			fprintf(stderr, "amptrace: no jbd2 tracepoints (module not loaded?): "
				"ext4 journal charged by window only\n");
	}
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

static int snapshot_devs(struct tracer *t, __u32 kdev, struct amp_dev_stats *st)
{
	memset(st, 0, sizeof(*st));
	return bpf_map__lookup_elem(t->skel->maps.devs, &kdev, sizeof(kdev), st, sizeof(*st), 0);
}

/* Device counters and BPF class counters, read at the same moment. */
static int take_baseline(struct tracer *t)
{
	FILE *f = popen("ls /sys/block", "r");
	char name[AMP_DISK_NAME_LEN];
	unsigned major, minor;

	if (!f)
		return -1;
	while (fscanf(f, "%31s", name) == 1) {
		struct baseline *b;

		if (t->opts->dev && strcmp(name, t->opts->dev))
			continue;
		if (disk_lookup(name, &major, &minor))
			continue;
		b = realloc(t->base, (t->nr_base + 1) * sizeof(*b));
		if (!b)
			break;
		t->base = b;
		b = &t->base[t->nr_base];
		memset(b, 0, sizeof(*b));
		memcpy(b->name, name, sizeof(b->name));
		b->kdev = (major << 20) | minor;
		if (disk_read_counter(name, &b->c))
			continue;
		snapshot_devs(t, b->kdev, &b->st);
		t->nr_base++;
	}
	pclose(f);
	return 0;
}

static void sum_losses(struct tracer *t, struct amp_stats *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct amp_stats *per = calloc(ncpu > 0 ? ncpu : 1, sizeof(*per));
	__u32 zero = 0;

	memset(out, 0, sizeof(*out));
	if (!per || ncpu <= 0)
		goto out;
	if (bpf_map__lookup_elem(t->skel->maps.stats, &zero, sizeof(zero), per,
				 ncpu * sizeof(*per), 0))
		goto out;
	for (int c = 0; c < ncpu; c++) {
		__u64 *src = (__u64 *)&per[c], *dst = (__u64 *)out;

		for (size_t i = 0; i < sizeof(*out) / sizeof(__u64); i++)
			dst[i] += src[i];
	}
out:
	free(per);
}

/* A settlement due for the sweep: its entry's id and slot. */
struct stale_slot {
	__u64 id;	/* first: sorted by id */
	__u32 slot;
};

/* Is the settlement in this slot due: any at all, or one whose entry
 * closed more than --settle-timeout ago?  Returns its id, 0 if not. */
static __u64 slot_due(const struct amp_settle *s, bool all, __u64 now_ns, __u64 timeout_ns)
{
	__u64 id = __atomic_load_n(&s->id, __ATOMIC_ACQUIRE);
	__u64 closed_ns = __atomic_load_n(&s->closed_ns, __ATOMIC_RELAXED);

	if (!id || all)
		return id;
	/* closed_ns may be after now_ns: closed since the clock was read. */
	if (!closed_ns || closed_ns > now_ns || now_ns - closed_ns < timeout_ns)
		return 0;
	return id;
}

/*
 * Entries closed long ago whose folios never all reached a device (all:
 * every one left, at exit): reported as they stand.  The kernel's slots are
 * read in place, through the mapping; a slot is taken by exchanging its id
 * for 0, as the kernel frees it, so exactly one of the two reports it.
 */
static void sweep_stale(struct tracer *t, bool all)
{
	__u64 now_ns, timeout_ns = t->opts->settle_timeout * 1000000000ULL;
	struct stale_slot *due = NULL;
	size_t n = 0, cap = 0;
	struct timespec now;

	if (!t->slots)
		return;
	clock_gettime(CLOCK_BOOTTIME, &now);
	now_ns = now.tv_sec * 1000000000ULL + now.tv_nsec;
	for (size_t i = 0; i < t->nr_slots; i++) {
		__u64 id = slot_due(&t->slots[i], all, now_ns, timeout_ns);

		if (!id)
			continue;
		if (n == cap) {
			size_t c = cap ? cap * 2 : 64;
			struct stale_slot *p = realloc(due, c * sizeof(*p));

			if (!p) {
				amp_err("sweeping unsettled entries: out of memory");
				break;
			}
			due = p;
			cap = c;
		}
		due[n].id = id;
		due[n++].slot = i;
	}
	if (n)	/* qsort wants a non-NULL base even for 0 elements */
		qsort(due, n, sizeof(*due), cmp_u64);	/* report in id order */
	for (size_t i = 0; i < n; i++) {
		struct amp_settle *slot = &t->slots[due[i].slot], s;
		__u64 expect = due[i].id;

		/* Copied before taking it: once free, a new entry may claim it. */
		memcpy(&s, slot, sizeof(s));
		/* Gone meanwhile: its last folio was written, it came by ring. */
		if (!__atomic_compare_exchange_n(&slot->id, &expect, 0, false,
						 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			continue;
		s.id = due[i].id;
		settled(t, &s, true);
		if (!all) {
			__u64 *id = malloc(sizeof(*id));

			if (id) {
				*id = s.id;
				tsearch(id, &t->timed_out, cmp_u64);
			}
			t->entries_timed_out++;
		}
	}
	free(due);
}

/* At exit: entries whose settlement never came (its record lost) are
 * reported as they stand, not dropped. */
static void report_unsettled(struct tracer *t)
{
	static struct amp_entry e;

	while (unsettled_take_any(t->unsettled, &e)) {
		e.flags |= AMP_ENTRY_DRAINED;
		ledger_entry(t->ledger, &e);
	}
}

static void files_summary(struct tracer *t, struct summary *s)
{
	int fd = bpf_map__fd(t->skel->maps.files);
	struct amp_file_key key, *prev = NULL;
	struct summary_file *f;

	while (!bpf_map_get_next_key(fd, prev, &key)) {
		f = realloc(s->files, (s->nr_files + 1) * sizeof(*f));
		if (!f)
			break;
		s->files = f;
		f = &s->files[s->nr_files];
		f->key = key;
		if (!bpf_map_lookup_elem(fd, &key, &f->st) && !f->st.excluded)
			s->nr_files++;
		prev = &f->key;
	}
}

static void devs_summary(struct tracer *t, struct summary *s)
{
	int fd = bpf_map__fd(t->skel->maps.devs);
	__u32 key, *prev = NULL;

	/* Every disk we saw bytes for, and every disk whose counter moved. */
	for (int i = 0; i < t->nr_base; i++) {
		struct baseline *b = &t->base[i];
		struct summary_dev d = { .kdev = b->kdev };
		struct disk_counter now;

		memcpy(d.name, b->name, sizeof(d.name));
		snapshot_devs(t, b->kdev, &d.st);
		for (int k = 0; k < AMP_NR_CLASSES; k++)
			d.st.bytes[k] -= b->st.bytes[k];
		d.st.charged_bytes -= b->st.charged_bytes;
		d.st.late_bytes -= b->st.late_bytes;
		d.st.ios -= b->st.ios;
		d.st.unwalked_bytes -= b->st.unwalked_bytes;
		d.st.meta_owned -= b->st.meta_owned;
		d.st.journal_txn -= b->st.journal_txn;
		d.st.meta_untraced -= b->st.meta_untraced;
		if (!disk_read_counter(b->name, &now)) {
			d.have_counter = true;
			d.delta.sectors_written = now.sectors_written - b->c.sectors_written;
			d.delta.write_ios = now.write_ios - b->c.write_ios;
		}
		if (!d.st.ios && !d.delta.sectors_written && !(t->opts->dev))
			continue;
		struct summary_dev *p = realloc(s->devs, (s->nr_devs + 1) * sizeof(*p));
		if (!p)
			return;
		s->devs = p;
		s->devs[s->nr_devs++] = d;
	}
	/* Disks that appeared during the run: no counter baseline. */
	while (!bpf_map_get_next_key(fd, prev, &key)) {
		bool known = false;

		for (int i = 0; i < t->nr_base; i++)
			known |= t->base[i].kdev == key;
		if (!known) {
			struct summary_dev *p = realloc(s->devs, (s->nr_devs + 1) * sizeof(*p));

			if (!p)
				return;
			s->devs = p;
			memset(&p[s->nr_devs], 0, sizeof(*p));
			p[s->nr_devs].kdev = key;
			if (!bpf_map_lookup_elem(fd, &key, &p[s->nr_devs].st)) {
				memcpy(p[s->nr_devs].name, p[s->nr_devs].st.name, AMP_DISK_NAME_LEN);
				s->nr_devs++;
			}
		}
		prev = &key;
	}
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What the maps and the ledger know besides the devices: ledger shares per
 * disk, per-file totals (optional: a walk of the files map), losses. */
static void complete_summary(struct tracer *t, struct summary *s, bool files)
{
	for (int i = 0; i < s->nr_devs; i++)
		if (ledger_disk(t->ledger, s->devs[i].kdev))
			s->devs[i].ledger = *ledger_disk(t->ledger, s->devs[i].kdev);
	if (files)
		files_summary(t, s);
	sum_losses(t, &s->losses);
	s->entries_timed_out = t->entries_timed_out;
	s->late_records = t->late_records;
}

/* Reporting and recording need the run's options; metrics listen early,
 * so a busy port fails before the BPF programs are loaded. */
static int open_consumers(struct tracer *t)
{
	const struct trace_opts *o = t->opts;

	if (o->mode != AMP_MODE_TOP) {
		if (o->output) {
			t->out = fopen(o->output, "w");
			if (!t->out) {
				amp_err("cannot write %s: %s", o->output, strerror(errno));
				return -1;
			}
		}
		setvbuf(t->out, NULL, _IOLBF, 0);
		t->report = report_new(t->out, o->json, o->quiet);
		if (!t->report)
			return -1;
	}
	if (o->mode == AMP_MODE_RECORD) {
		/* The report's clock, so that both print the same times. */
		t->rec = recorder_new(o->record_path, o, report_clock(t->report));
		if (!t->rec)
			return -1;
	}
	if (o->metrics_addr || o->metrics_file) {
		t->metrics = metrics_new(o->metrics_addr, o->metrics_file);
		if (!t->metrics)
			return -1;
	}
	return 0;
}

/* ok: the run succeeded, so the recorder may say what it wrote. */
static int close_consumers(struct tracer *t, bool ok)
{
	int err = 0;

	top_free(t->top);	/* first: gives the terminal back */
	metrics_free(t->metrics);
	if (recorder_close(t->rec, ok))
		err = -1;
	report_free(t->report);
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

/*
 * Work that is not per record: report stale entries
 * and close quiet ledger windows; then feed the consumers that are due one
 * shared snapshot of the devices.  True when top has shown its count.
 */
static bool periodic(struct tracer *t)
{
	double now = now_s();
	bool top_due, metrics_due, checkpoint_due, done = false;
	struct summary s = {};

	if (now >= t->next_stale) {
		sweep_stale(t, false);
		t->next_stale = now + stale_period(t);
	}
	if (now >= t->next_sweep) {
		ledger_tick(t->ledger, false);
		t->next_sweep = now + SWEEP_PERIOD;
	}
	top_due = t->top && now >= t->next_screen;
	metrics_due = t->metrics && now >= t->next_metrics;
	checkpoint_due = t->rec && now >= t->next_checkpoint;
	if (!top_due && !metrics_due && !checkpoint_due)
		return false;

	s.duration_s = now - t->start;
	devs_summary(t, &s);
	complete_summary(t, &s, false);
	if (top_due) {
		done = top_tick(t->top, &s);
		/* On the interval's grid, unless we fell a whole interval behind. */
		t->next_screen += t->opts->interval;
		if (t->next_screen <= now)
			t->next_screen = now + t->opts->interval;
	}
	if (metrics_due) {
		metrics_update(t->metrics, &s);
		t->next_metrics = now + METRICS_PERIOD;
	}
	if (checkpoint_due) {
		recorder_summary(t->rec, &s, false);
		t->next_checkpoint = now + CHECKPOINT_PERIOD;
	}
	free(s.devs);
	return done;
}

static void detach_syscall_hooks(struct tracer *t)
{
	while (t->nr_sys_links > 0)
		bpf_link__destroy(t->sys_links[--t->nr_sys_links]);
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
		if (sys[i].kind == AMP_SYS_SOCKRECV)
			continue;	/* its exit does everything */
		snprintf(event, sizeof(event), "sys_enter_%s", sys[i].name);
		if (!add_sys_link(t, bpf_program__attach_tracepoint(skel->progs.on_syscall_enter,
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
	/* Attached by attach_syscall_hooks, one way or the other; the raw pair
	 * is loaded only where it may be needed (each load is an audit record
	 * where audit is on). */
	if (syscall_events_exist(sys, nr_sys) && !t->opts->raw_syscalls) {
		bpf_program__set_autoload(t->skel->progs.on_sys_enter, false);
		bpf_program__set_autoload(t->skel->progs.on_sys_exit, false);
	}
	bpf_program__set_autoattach(t->skel->progs.on_sys_enter, false);
	bpf_program__set_autoattach(t->skel->progs.on_sys_exit, false);
	bpf_program__set_autoattach(t->skel->progs.on_syscall_enter, false);
	bpf_program__set_autoattach(t->skel->progs.on_syscall_exit, false);
	err = amptrace__load(t->skel);
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
	/* Entries opened until startup_finish() are amptrace's own cost. */
	t->skel->bss->startup_own = t->startup != NULL;
	err = amptrace__attach(t->skel);
	if (err) {
		amp_err("cannot attach to tracepoints (%s); rerun with -v", strerror(-err));
		return -1;
	}
	if (attach_syscall_hooks(t, sys, nr_sys))
		return -1;
	t->ledger = ledger_new(deliver_entry, t, bpf_map__fd(t->skel->maps.devs));
	t->unsettled = unsettled_new();
	if (!t->ledger || !t->unsettled)
		return -1;
	t->rb = ring_buffer__new(bpf_map__fd(t->skel->maps.events), on_record, t, NULL);
	if (!t->rb) {
		amp_err("cannot create the ring buffer reader: %s", strerror(errno));
		return -1;
	}
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
		.startup_own = &t->skel->bss->startup_own,
		.held = t->unsettled,
	};
	struct amp_settle now;

	if (startup_finish(t->startup, &tg, &now) == 1)
		settled(t, &now, false);
}

/* Until a signal, -d, top's count or its q key. */
static int poll_loop(struct tracer *t)
{
	const struct trace_opts *o = t->opts;
	int err;

	t->start = now_s();
	t->next_sweep = t->start + SWEEP_PERIOD;
	t->next_stale = t->start + stale_period(t);
	t->next_screen = t->start + o->interval;
	t->next_metrics = t->start;	/* the endpoint has devices from the start */
	t->next_checkpoint = t->start + CHECKPOINT_PERIOD;
	while (!stop_requested) {
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
	struct bpf_link *exit_link = NULL;
	struct summary s = {};
	int nr_sys, err = -1;

	verbose = o->verbose;
	libbpf_set_print(libbpf_log);
	if (preflight_check(o->btf_path))
		return -1;
	if (preset_resolve(o->preset, o, &sys, &nr_sys))
		return -1;
	if (open_consumers(&t))
		goto cleanup;
	/* Before any program is loaded: what the traced processes had dirty. */
	t.startup = startup_begin(o);
	err = load_and_attach(&t, sys, nr_sys);
	kernel_btf_release();	/* no more tracepoints to look up */
	if (err)
		goto cleanup;
	err = -1;
	take_baseline(&t);
	paths_use_maps(bpf_map__fd(t.skel->maps.files), bpf_map__fd(t.skel->maps.file_paths));
	own_startup(&t);

	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);	/* a closed terminal stops us cleanly too */
	fprintf(stderr, "amptrace: tracing (%s preset, %d syscalls, %s); Ctrl-C to stop\n",
		o->preset, nr_sys, t.sys_hook);
	if (o->mode == AMP_MODE_TOP && !(t.top = top_new(o)))
		goto cleanup;
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
	devs_summary(&t, &s);
	ring_buffer__consume(t.rb);
	drain_open_entries(&t);
	bpf_link__destroy(exit_link);
	exit_link = NULL;
	ring_buffer__consume(t.rb);	/* what the drain reported */
	sweep_stale(&t, true);
	report_unsettled(&t);
	ledger_flush(t.ledger, bpf_map__fd(t.skel->maps.txns));
	complete_summary(&t, &s, true);
	/* The report first: it resolves the files' paths the record then keeps. */
	if (t.report)
		report_summary(t.report, &s);
	if (t.rec)
		recorder_summary(t.rec, &s, true);
	if (t.metrics && metrics_update(t.metrics, &s))
		err = -1;

cleanup:
	bpf_link__destroy(exit_link);
	ring_buffer__free(t.rb);
	if (t.slots)
		munmap(t.slots, t.nr_slots * sizeof(*t.slots));
	detach_syscall_hooks(&t);
	amptrace__destroy(t.skel);
	ledger_free(t.ledger);
	unsettled_free(t.unsettled);
	startup_free(t.startup);
	if (close_consumers(&t, !err))
		err = -1;
	tdestroy(t.timed_out, free);
	free(t.base);
	free(s.devs);
	free(s.files);
	return err;
}
